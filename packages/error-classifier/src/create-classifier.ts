// biome-ignore-all lint/suspicious/noThenProperty: rules are { match, then } (docs/errors.md); `then` is data, never callable, so no rule is a thenable
import { MAY_HAVE_TAKEN_EFFECT, requestFate, type ToolEffect, ToolError, type ToolErrorOptions } from '@shallot/core'
import { createSanitizer, wallNowOf, wallNowShape, withoutStackTrace } from '@shallot/core/kit'
import { z } from 'zod'
import { describeError } from './describe-error.js'
import { type ErrorFacts, errorFacts, headerOf } from './error-facts.js'
import { matchRule, type RuleMatcher } from './match-rule.js'
import { parseRetryAfter, parseRetryAfterMs } from './retry-after.js'
import { builtinRules, type ClassifierRule, classifierRuleSchema } from './rules.js'

/**
 * Options shared by {@link classify}, {@link createClassifier} and the `errorClassifier()` middleware.
 *
 * @example
 * const options = parseOptions('myLayer()', classifyOptionsSchema, { maxLength: 300, secrets: [apiKey] })
 */
export const classifyOptionsSchema = z
  .object({
    /** Your rules; tried before the built-in ones, first match wins. */
    rules: z.array(classifierRuleSchema).max(1000).default([]),
    /** Set false to use only your rules. */
    builtins: z.boolean().default(true),
    /** Longest message or hint the model reads, marker included. */
    maxLength: z.number().int().min(40).max(100_000).default(500),
    /** Longest `retryAfterMs` a server can ask for; longer values are clamped. */
    maxRetryAfterMs: z
      .number()
      .int()
      .nonnegative()
      .max(24 * 3600 * 1000)
      .default(60_000),
    /** `wallNow`: wall-clock epoch milliseconds for HTTP-date `Retry-After` values. Default `Date.now`. */
    ...wallNowShape,
    /**
     * Literal strings (your API keys, say) always redacted from the text. The stack redacts them from
     * every other text the model reads too, whichever layer wrote it.
     */
    secrets: z.array(z.string()).max(1000).default([]),
  })
  .strict()

export type ClassifyOptions = z.input<typeof classifyOptionsSchema>
type ParsedOptions = z.output<typeof classifyOptionsSchema>

/** A classifier compiled once from options. */
export interface Classifier {
  /**
   * The ToolError for `error`, or `undefined` when no rule matches. `tool` names the tool in panic
   * messages; `effect` is the tool's, so a write whose outcome is unknown is not told to try again.
   */
  tryClassify(error: unknown, tool?: string, effect?: ToolEffect): ToolError | undefined
  /** The ToolError for `error`; unmatched throwables become `tool_panic`. */
  classify(error: unknown, tool?: string, effect?: ToolEffect): ToolError
  /** `error` with its message and hint sanitized (and worded for a `write`, as above); the same instance when nothing changed. */
  sanitize(error: ToolError, effect?: ToolEffect): ToolError
}

/**
 * A transient failure of a write that may have taken effect: the identical call will not be repeated
 * (retry will not, idempotency refuses it), so the model must not be told to try again or when.
 */
const mayHaveTakenEffect = (effect: ToolEffect | undefined, init: { category?: string | undefined; safeToRepeat?: boolean | undefined }) =>
  effect === 'write' && init.category === 'transient' && init.safeToRepeat !== true

interface CompiledRule {
  readonly id: string
  readonly then: ClassifierRule['then']
  readonly matches: RuleMatcher
}

const EMPTY_FACTS: ErrorFacts = {
  status: undefined,
  statusText: undefined,
  headers: undefined,
  codes: [],
  names: [],
  messages: [],
  issues: undefined,
  detail: undefined,
  types: [],
  provider: undefined,
}

function safeFacts(error: unknown): ErrorFacts {
  try {
    return errorFacts(error)
  } catch {
    return EMPTY_FACTS
  }
}

const fallback: CompiledRule = {
  id: 'fallback',
  then: { code: 'tool_panic', category: 'recoverable', retryable: false },
  matches: () => true,
}

function compile(rule: ClassifierRule, id: string): CompiledRule {
  return { id, then: rule.then, matches: matchRule(rule) }
}

// The built-in table is frozen data, so it is compiled once for every classifier in the process.
let compiledBuiltins: readonly CompiledRule[] | undefined
const builtinsCompiled = () => {
  compiledBuiltins ??= Object.freeze(builtinRules.map((rule, i) => compile(rule, rule.id ?? `builtin[${i}]`)))
  return compiledBuiltins
}

/**
 * A ToolError made from a thrown error, without a stack of its own: its frames would be the
 * classifier's, and the error it wraps (its `cause`, which Node prints beneath it) holds the stack
 * that says where the failure happened. Capturing one costs 10–15 µs in optimized code, on every
 * failed attempt.
 */
function unstacked(code: ToolError['code'], message: string, init: ToolErrorOptions): ToolError {
  return withoutStackTrace(newToolError, code, message, init)
}

const newToolError = (code: ToolError['code'], message: string, init: ToolErrorOptions) => new ToolError(code, message, init)

export function createClassifier(options: ParsedOptions): Classifier {
  const own = options.rules.map((rule, i) => compile(rule, rule.id ?? `rules[${i}]`))
  const rules: readonly CompiledRule[] = !options.builtins ? own : own.length === 0 ? builtinsCompiled() : [...own, ...builtinsCompiled()]
  const now = wallNowOf(options) ?? Date.now
  const sanitizer = createSanitizer({ secrets: options.secrets })
  const clean = (text: string) => sanitizer.text(text, options.maxLength)

  function retryAfterOf(facts: ErrorFacts): number | undefined {
    if (facts.headers === undefined) return undefined
    const ms = parseRetryAfterMs(headerOf(facts.headers, 'retry-after-ms'), options.maxRetryAfterMs)
    if (ms !== undefined) return ms
    return parseRetryAfter(headerOf(facts.headers, 'retry-after'), { now: now(), maxMs: options.maxRetryAfterMs })
  }

  function build(
    error: unknown,
    facts: ErrorFacts,
    rule: CompiledRule,
    tool: string | undefined,
    effect: ToolEffect | undefined,
  ): ToolError {
    const { code, category, retryable, safeToRepeat, hint } = rule.then
    const details: Record<string, unknown> = { rule: rule.id }
    if (facts.status !== undefined) details.status = facts.status
    if (facts.codes.length > 0) details.errorCodes = facts.codes
    const retryAfterMs = retryAfterOf(facts)
    // A rule may say; otherwise core's table of what each failure means for a write (was it processed?) decides.
    const notProcessed =
      safeToRepeat ?? requestFate({ status: facts.status, retryAfter: retryAfterMs !== undefined, codes: facts.codes }) === 'not_processed'
    const init: ToolErrorOptions = {
      category,
      retryable: retryable ?? category === 'transient',
      safeToRepeat: notProcessed,
      cause: error,
      details,
    }
    if (mayHaveTakenEffect(effect, init)) init.hint = MAY_HAVE_TAKEN_EFFECT
    else {
      if (hint !== undefined) init.hint = clean(hint)
      // Waiting helps neither a person-fixable nor a fatal failure (a quota refusal sent with Retry-After, say).
      if (retryAfterMs !== undefined && category !== 'user' && category !== 'fatal') init.retryAfterMs = retryAfterMs
    }
    return unstacked(code, clean(describeError(facts, code, tool)), init)
  }

  function find(facts: ErrorFacts): CompiledRule | undefined {
    let lower: string | undefined
    const lowerText = () => {
      // Matching reads at most the first 4 KB of text: enough for any needle, bounded on any input.
      lower ??= facts.messages.join('\n').slice(0, 4096).toLowerCase()
      return lower
    }
    return rules.find((rule) => rule.matches(facts, lowerText))
  }

  return {
    tryClassify(error, tool, effect) {
      const facts = safeFacts(error)
      const rule = find(facts)
      return rule === undefined ? undefined : build(error, facts, rule, tool, effect)
    },
    classify(error, tool, effect) {
      const facts = safeFacts(error)
      return build(error, facts, find(facts) ?? fallback, tool, effect)
    },
    sanitize(error, effect) {
      const message = clean(error.message)
      const reworded = mayHaveTakenEffect(effect, error)
      const hint = reworded ? MAY_HAVE_TAKEN_EFFECT : error.hint === undefined ? undefined : clean(error.hint)
      if (message === error.message && hint === error.hint && (!reworded || error.retryAfterMs === undefined)) return error
      const init: ToolErrorOptions = {
        category: error.category,
        retryable: error.retryable,
        safeToRepeat: error.safeToRepeat,
        cause: error,
      }
      if (hint !== undefined) init.hint = hint
      if (error.retryAfterMs !== undefined && !reworded) init.retryAfterMs = error.retryAfterMs
      if (error.details !== undefined) init.details = error.details
      return unstacked(error.code, message, init)
    },
  }
}
