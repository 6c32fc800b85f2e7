import { parseOptions, type ToolError } from '@shallot/core'
import { refineWallNow } from '@shallot/core/kit'
import { type Classifier, type ClassifyOptions, classifyOptionsSchema, createClassifier } from './create-classifier.js'

/** Options for one {@link classify} call: the classifier options plus the tool's name for panic messages. */
export interface ClassifyCallOptions extends ClassifyOptions {
  /** The tool that threw, named in `tool_panic` messages. */
  tool?: string
}

const callOptionsSchema = classifyOptionsSchema.superRefine(refineWallNow)
let defaults: Classifier | undefined

// Options given are checked on every call, never remembered by identity: an object changed between two
// calls is read, and refused, as it is now. Compiling them is cheap, the built-in rules are compiled once.
function classifierFor(options: ClassifyCallOptions | undefined): Classifier {
  if (options === undefined) {
    defaults ??= createClassifier(parseOptions('classify()', classifyOptionsSchema, {}))
    return defaults
  }
  // Anything but an object is refused as it is: spread, classify(err, 'charge') would read as options "0" to "5".
  if (typeof options !== 'object' || options === null || Array.isArray(options))
    return createClassifier(parseOptions('classify()', callOptionsSchema, options))
  const { tool: _tool, ...rest } = options
  return createClassifier(parseOptions('classify()', callOptionsSchema, rest))
}

/**
 * Maps any thrown value to a soft {@link ToolError} with the right code, category, retry flags and
 * clamped `retryAfterMs`, its text redacted and capped. A pure function: same input, same output
 * (an HTTP-date `Retry-After` is read against `options.now`). Throwables no rule recognises become
 * `tool_panic`; use {@link tryClassify} to tell them apart.
 *
 * @example
 * classify(Object.assign(new Error('Too Many Requests'), { status: 429, headers: { 'retry-after': '7' } }))
 * // ToolError { code: 'rate_limited', category: 'transient', retryable: true, safeToRepeat: true, retryAfterMs: 7000 }
 */
export function classify(error: unknown, options?: ClassifyCallOptions): ToolError {
  return classifierFor(options).classify(error, options?.tool)
}

/**
 * Like {@link classify}, but returns `undefined` when no rule recognises the throwable, so the caller
 * can leave it to a panic catcher.
 *
 * @example
 * tryClassify(new Error('boom')) // undefined
 * tryClassify({ code: 'ECONNRESET' })?.code // 'network_error'
 */
export function tryClassify(error: unknown, options?: ClassifyCallOptions): ToolError | undefined {
  return classifierFor(options).tryClassify(error, options?.tool)
}
