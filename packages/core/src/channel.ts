import { abortReason } from './cancellation.js'
import { MiddlewareUsageError } from './compose.js'
import { LoopError, ToolError, type ToolErrorJSON } from './errors.js'

/**
 * The one soft→hard decision: `undefined` when a thrown value is a soft ToolError the model reads,
 * else the LoopError that ends the run. An aborted call ends with its abort reason when that is a
 * LoopError (cancellation wins over whatever the layers made of it); a MiddlewareUsageError or a
 * foreign throw that no layer caught is `tool_crashed`.
 *
 * @example
 * const hard = toHard(err, ctx.signal, call.name)
 * if (hard !== undefined) throw hard
 */
export function toHard(
  err: unknown,
  signal: { readonly aborted: boolean; readonly reason: unknown },
  tool: string,
  clean: (text: string) => string = (text) => text,
): LoopError | undefined {
  if (LoopError.is(err)) return err
  if (signal.aborted) {
    const reason = abortReason(signal)
    if (LoopError.is(reason)) return reason
  }
  if (ToolError.is(err)) return undefined
  if (err instanceof MiddlewareUsageError) {
    return new LoopError('tool_crashed', clean(`a middleware broke the onion's contract: ${err.message}`), {
      cause: err,
      details: { tool },
    })
  }
  // The caller may show this message, or feed it to a model: the thrown text is sanitized like any other.
  const what = err instanceof Error ? clean(`${err.name}: ${err.message}`) : typeof err
  return new LoopError(
    'tool_crashed',
    `Tool '${tool}' threw ${what}, and no layer turned it into a soft error; add panicCatcher() to the stack`,
    { cause: err, details: { tool } },
  )
}

/** Which soft-error categories end the run instead of reaching the model: a stack-level policy. */
export interface EscalationPolicy {
  /** A `fatal` soft error ends the run as `LoopError('fatal')`. Default true. */
  readonly fatal: boolean
  /** A `user` soft error ends the run as `LoopError('user_input_required')`. Default true. */
  readonly user: boolean
}

/** The default policy: both categories end the run, for every caller of `stack.dispatch`. */
export const ESCALATE_ALL: EscalationPolicy = Object.freeze({ fatal: true, user: true })

/**
 * The second soft→hard decision, made after the layers answered: a soft error whose category the
 * policy escalates becomes the LoopError that ends the run, else `undefined` (the model reads it).
 * `error` is the sanitized JSON the model would have read, so the LoopError carries no secret.
 *
 * @example
 * const hard = escalation(result.error, result.name, { fatal: true, user: true })
 * if (hard !== undefined) throw hard
 */
export function escalation(error: ToolErrorJSON, tool: string, policy: EscalationPolicy, cause?: unknown): LoopError | undefined {
  if (error.category === 'fatal' && policy.fatal) {
    return new LoopError('fatal', `${tool} failed fatally: ${error.message}`, {
      cause,
      details: { tool, code: error.code, message: error.message },
    })
  }
  if (error.category === 'user' && policy.user) {
    return new LoopError('user_input_required', `${tool} needs a person: ${error.message}`, {
      cause,
      details: { tool, code: error.code, message: error.message },
    })
  }
  return undefined
}
