import { type Clock, LoopError, ToolError } from '@shallot/core'
import { isTransientModelError } from '@shallot/core/kit'
import { retryAfterFromHeaders } from '@shallot/error-classifier'

/** How `shallotMiddleware` bounds and repeats each model call. */
export interface ModelCallPolicy {
  /** Deadline of one attempt; the request is aborted when it passes. */
  timeoutMs: number
  /** Attempts per model call, counting the first. */
  maxAttempts: number
  /** Full-jitter exponential backoff between attempts: base and cap, in ms. */
  baseMs: number
  capMs: number
  /** The longest `Retry-After` honoured; a server asking for more is not waited for. */
  maxRetryAfterMs: number
}

const noop = () => {}

/**
 * The server's pushback in ms (`retry-after-ms`, `retry-after` as seconds or an HTTP date), from the error or its
 * causes, read by `@shallot/error-classifier`'s one parser; unclamped, so the policy's `maxRetryAfterMs` sees it whole.
 */
export function retryAfterMsOf(error: unknown, nowMs: number = Date.now()): number | undefined {
  for (let current = error, depth = 0; typeof current === 'object' && current !== null && depth < 5; depth++) {
    const headers = (current as { headers?: unknown }).headers ?? (current as { response?: { headers?: unknown } }).response?.headers
    const ms = retryAfterFromHeaders(headers, { now: nowMs, maxMs: Number.POSITIVE_INFINITY })
    if (ms !== undefined) return ms
    current = (current as { cause?: unknown }).cause
  }
  return undefined
}

// Anthropic reports overload mid-stream as an SSE error event, so the error has a type but no status.
const isOverloaded = (error: unknown) =>
  typeof error === 'object' && error !== null && (error as { error?: { type?: unknown } }).error?.type === 'overloaded_error'

/**
 * Runs `attempt(signal)` under the policy: each attempt gets a signal that aborts at its deadline (or
 * when `parent` aborts); transient failures (core's `isTransientModelError`: timeouts, 408, 429, 5xx
 * including 529, dropped connections) are retried after a full-jitter backoff, never shorter than the
 * server's `Retry-After`. Ends as `LoopError('model_failed')` past the attempts, or the abort reason
 * of `parent` when the caller cancels.
 */
export async function callWithPolicy<T>(
  attempt: (signal: AbortSignal) => Promise<T>,
  env: { policy: ModelCallPolicy; clock: Clock; random: () => number; parent: AbortSignal | undefined },
): Promise<T> {
  const { policy, clock, random, parent } = env
  for (let n = 1; ; n++) {
    if (parent?.aborted) throw cancelled(parent)
    const controller = new AbortController()
    const onAbort = () => controller.abort(parent?.reason)
    parent?.addEventListener('abort', onAbort, { once: true })
    const timer = new AbortController()
    const deadline = clock.sleep(policy.timeoutMs, timer.signal).then(() => {
      const error = new ToolError('timeout', `the model did not answer within ${policy.timeoutMs} ms`, { category: 'transient' })
      controller.abort(error)
      throw error
    }, noop) as Promise<never>
    let failure: unknown
    try {
      return await Promise.race([attempt(controller.signal), deadline])
    } catch (error) {
      failure = ToolError.is(controller.signal.reason) ? controller.signal.reason : error
    } finally {
      timer.abort()
      parent?.removeEventListener('abort', onAbort)
    }
    if (parent?.aborted) throw cancelled(parent)
    if (LoopError.is(failure)) throw failure
    const message = failure instanceof Error ? failure.message : String(failure)
    const transient = isTransientModelError(failure) || isOverloaded(failure)
    const pushback = retryAfterMsOf(failure)
    if (!transient || n >= policy.maxAttempts || (pushback !== undefined && pushback > policy.maxRetryAfterMs)) {
      throw new LoopError('model_failed', `the model call failed after ${n} attempt${n === 1 ? '' : 's'}: ${message}`, {
        cause: failure,
        details: { attempts: n },
      })
    }
    const backoff = Math.floor(random() * Math.min(policy.capMs, policy.baseMs * 2 ** (n - 1)))
    try {
      await clock.sleep(Math.max(backoff, pushback ?? 0), parent)
    } catch {
      throw cancelled(parent)
    }
  }
}

function cancelled(parent: AbortSignal | undefined): LoopError {
  const reason: unknown = parent?.reason
  return LoopError.is(reason) ? reason : new LoopError('cancelled', 'the run was cancelled', { cause: reason })
}
