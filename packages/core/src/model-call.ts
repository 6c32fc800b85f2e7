import { abortReason, onAbort } from './channel.js'
import { LoopError, ToolError } from './errors.js'
import { LinkedSignal } from './linked-signal.js'
import type { ModelAdapter, ModelRequest, ModelResponse } from './model.js'
import type { Budget, Clock, Logger } from './types.js'

export interface ModelRetry {
  /** Attempts per model call, counting the first. */
  maxAttempts: number
  baseMs: number
  capMs: number
}

const TRANSIENT_CODES = new Set(['ECONNRESET', 'ECONNREFUSED', 'ETIMEDOUT', 'EPIPE', 'EAI_AGAIN', 'ENOTFOUND', 'UND_ERR_SOCKET'])

/** Whether a model failure is worth another try: timeouts, 408/429/5xx, dropped connections. */
export function isTransientModelError(err: unknown): boolean {
  if (ToolError.is(err)) return err.retryable
  if (typeof err !== 'object' || err === null) return false
  const e = err as { status?: unknown; statusCode?: unknown; code?: unknown; name?: unknown; cause?: unknown }
  const status = typeof e.status === 'number' ? e.status : typeof e.statusCode === 'number' ? e.statusCode : undefined
  if (status !== undefined) return status === 408 || status === 429 || status >= 500
  if (typeof e.code === 'string' && TRANSIENT_CODES.has(e.code)) return true
  if (e.name === 'TimeoutError') return true
  return e.cause !== undefined && e.cause !== err && isTransientModelError(e.cause)
}

const noop = () => {}
// A reason of our own: aborting without one allocates a DOMException with a stack trace.
const CANCELLED = Symbol('model deadline cancelled')

/** Calls `fire` after `ms` on `clock` unless the returned function runs first; leaves nothing behind either way. */
function startTimer(clock: Clock, ms: number, fire: () => void): () => void {
  if (clock.timer !== undefined) return clock.timer(ms, fire)
  const controller = new AbortController()
  clock.sleep(ms, controller.signal).then(fire, noop)
  return () => controller.abort(CANCELLED)
}

/**
 * One attempt: settles with the model's answer, at the deadline, or the moment the run is
 * cancelled, whether or not the adapter listens to its signal; a late answer is dropped. The
 * adapter's signal is created only if it reads `request.signal`, and is aborted once the attempt
 * settles, so a request the adapter left running is cancelled too.
 */
function once(
  model: ModelAdapter,
  request: Omit<ModelRequest, 'signal'>,
  signal: AbortSignal,
  clock: Clock,
  timeoutMs: number,
): Promise<ModelResponse> {
  const own = new LinkedSignal(signal)
  return new Promise<ModelResponse>((resolve, reject) => {
    let waiting = true
    let cancelTimer = noop
    let offAbort = noop
    const stop = (): boolean => {
      if (!waiting) return false
      waiting = false
      cancelTimer()
      offAbort()
      return true
    }
    cancelTimer = startTimer(clock, timeoutMs, () => {
      const error = new ToolError('timeout', `the model did not answer within ${timeoutMs} ms`)
      own.close(error)
      if (stop()) reject(error)
    })
    offAbort = onAbort(signal, () => {
      if (stop()) reject(abortReason(signal))
    })
    let answer: Promise<ModelResponse>
    try {
      answer = Promise.resolve(
        model.generate({
          ...request,
          get signal() {
            return own.signal
          },
        }),
      )
    } catch (err) {
      answer = Promise.reject(err)
    }
    answer.then(
      (response) => {
        if (stop()) resolve(response)
      },
      (err: unknown) => {
        if (stop()) reject(err)
      },
    )
  }).finally(() => own.close())
}

/**
 * Asks the model, with a deadline per attempt and a small capped full-jitter backoff on transient
 * failures. Each attempt spends a step. Ends as `model_failed` past its retries, `cancelled` on abort.
 */
export async function callModel(
  model: ModelAdapter,
  request: Omit<ModelRequest, 'signal'>,
  env: { signal: AbortSignal; clock: Clock; random: () => number; budget: Budget; log: Logger; timeoutMs: number; retry: ModelRetry },
): Promise<ModelResponse> {
  for (let attempt = 1; ; attempt++) {
    if (env.signal.aborted) throw abortReason(env.signal)
    env.budget.spend('model')
    try {
      const response = await once(model, request, env.signal, env.clock, env.timeoutMs)
      if (typeof response !== 'object' || response === null) throw new TypeError('the model adapter returned no response object')
      return response
    } catch (err) {
      if (env.signal.aborted) throw abortReason(env.signal)
      if (LoopError.is(err)) throw err
      const message = err instanceof Error ? err.message : String(err)
      if (!isTransientModelError(err) || attempt >= env.retry.maxAttempts) {
        throw new LoopError('model_failed', `the model call failed after ${attempt} attempt${attempt === 1 ? '' : 's'}: ${message}`, {
          cause: err,
          details: { attempts: attempt },
        })
      }
      const delay = Math.floor(env.random() * Math.min(env.retry.capMs, env.retry.baseMs * 2 ** (attempt - 1)))
      env.log.warn({ attempt, delayMs: delay, error: message }, 'model call failed; retrying')
      try {
        await env.clock.sleep(delay, env.signal)
      } catch {
        throw abortReason(env.signal)
      }
    }
  }
}
