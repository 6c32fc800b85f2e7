import { abortReason, type ToolContext, type ToolError } from '@shallot/core'
import { MAX_DELAY_MS } from './backoff/backoff.js'
import type { RetryStopReason } from './plan-retry.js'

/** What `onRetry` is told about the failed attempt retry is about to repeat. */
export interface RetryAttemptInfo {
  /** The attempt's error, as the model would read it. */
  readonly error: ToolError
  /** The attempt that failed (1-based, every layer's repeats counted). */
  readonly attempt: number
  /** The wait retry planned before the next attempt (backoff, at least the error's `retryAfterMs`). */
  readonly delayMs: number
  readonly tool: string
  readonly callId: string
  /** The call's signal: aborts when the run is cancelled or an outer deadline passes. */
  readonly signal: AbortSignal
}

/** What `onGiveUp` is told: the error the call ends with, and why retry stopped. */
export interface RetryGiveUpInfo {
  readonly error: ToolError
  readonly attempt: number
  readonly reason: RetryStopReason
  readonly tool: string
  readonly callId: string
  readonly signal: AbortSignal
}

/** `onRetry`'s answer: nothing (go on as planned), `'stop'`, or `{ delayMs }` (wait at least this long). */
export type RetryHookAnswer = undefined | 'stop' | { readonly delayMs: number }

/** How a hook's call went: its answer, or why there is none. */
export type HookResult = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly why: 'threw' | 'timed_out' }

/**
 * Calls a user hook and waits for it, at most `timeoutMs` and never past `signal`: a hook that
 * throws or never settles gives `{ ok: false }` (logged), a cancelled call rejects with the cancel
 * reason. A result that arrives after the wait ended is ignored and can never reject unhandled.
 *
 * @example
 * const r = await callHook(ctx, 'onRetry', () => onRetry(info), signal, 10_000)
 */
export async function callHook(
  ctx: ToolContext,
  name: string,
  hook: () => unknown,
  signal: AbortSignal,
  timeoutMs: number,
): Promise<HookResult> {
  if (signal.aborted) throw abortReason(signal)
  let pending: unknown
  try {
    pending = hook()
    // Reading `then` runs the answer's code too (a getter, a Proxy trap, a revoked Proxy): it may throw as well.
    if (typeof (pending as PromiseLike<unknown> | undefined)?.then !== 'function') return { ok: true, value: pending }
  } catch (err) {
    ctx.log.error({ err, hook: name }, `retry ${name} threw; not retrying`)
    return { ok: false, why: 'threw' }
  }
  let finish: (result: HookResult | undefined) => void = () => {}
  const ended = new Promise<HookResult | undefined>((resolve) => {
    finish = resolve
  })
  let done = false
  // Not Promise.resolve: it reads a promise's `constructor` and throws if that throws; a resolver turns every
  // throw while adopting the answer into a rejection.
  const answered = new Promise<unknown>((resolve) => resolve(pending)).then(
    (value) => finish({ ok: true, value }),
    (err: unknown) => {
      if (!done) ctx.log.error({ err, hook: name }, `retry ${name} rejected; not retrying`)
      finish({ ok: false, why: 'threw' })
    },
  )
  void answered
  const onAbort = () => finish(undefined)
  signal.addEventListener('abort', onAbort, { once: true })
  // The clock's callback timer when it has one (no AbortController); an abortable sleep otherwise.
  let cancelTimer: () => void
  if (ctx.clock.timer !== undefined) {
    cancelTimer = ctx.clock.timer(timeoutMs, () => finish({ ok: false, why: 'timed_out' }))
  } else {
    const stop = new AbortController()
    ctx.clock.sleep(timeoutMs, stop.signal).then(
      () => finish({ ok: false, why: 'timed_out' }),
      () => {},
    )
    cancelTimer = () => stop.abort()
  }
  try {
    const result = await ended
    if (signal.aborted) throw abortReason(signal)
    if (result === undefined) return { ok: false, why: 'timed_out' }
    if (!result.ok && result.why === 'timed_out') {
      ctx.log.error({ hook: name, timeoutMs }, `retry ${name} did not settle in ${timeoutMs} ms; not retrying`)
    }
    return result
  } finally {
    done = true
    signal.removeEventListener('abort', onAbort)
    cancelTimer()
  }
}

/** `onRetry`'s answer as a decision: retry after `delayMs`, or stop, with what was wrong with the answer. */
export type HookDecision = { readonly retry: true; readonly delayMs: number } | { readonly retry: false; readonly why: string }

/**
 * Reads `onRetry`'s answer: nothing keeps the planned delay, `{ delayMs }` may only lengthen it
 * (a hook cannot make retrying more aggressive than the policy), `'stop'` stops; anything else
 * (NaN, a negative or non-finite delay, a string) is a mistake read as stop, the safe side.
 * A delay past `maxMs` (the backoff's cap, or what `maxElapsedMs` leaves) is not waited out.
 * Reading the answer runs its code (a `delayMs` getter, Proxy traps), so this may throw: callers
 * treat a throw as stop, as they treat a hook that throws.
 *
 * @example
 * readAnswer({ delayMs: 2000 }, 500, 8000) // { retry: true, delayMs: 2000 }
 */
export function readAnswer(answer: unknown, plannedMs: number, maxMs: number): HookDecision {
  if (answer === undefined || answer === null) return { retry: true, delayMs: plannedMs }
  if (answer === 'stop') return { retry: false, why: 'answered stop' }
  if (typeof answer !== 'object' || Array.isArray(answer) || !Object.hasOwn(answer, 'delayMs')) {
    return { retry: false, why: `answered ${describe(answer)}, not undefined, 'stop' or { delayMs }` }
  }
  const delayMs: unknown = (answer as { delayMs: unknown }).delayMs
  if (typeof delayMs !== 'number' || !Number.isFinite(delayMs) || delayMs < 0) {
    return { retry: false, why: `answered delayMs ${describe(delayMs)}, not a finite number of ms >= 0` }
  }
  const wait = Math.max(plannedMs, delayMs)
  if (wait > Math.min(maxMs, MAX_DELAY_MS))
    return { retry: false, why: `asked to wait ${delayMs} ms, more than the ${Math.min(maxMs, MAX_DELAY_MS)} ms allowed` }
  return { retry: true, delayMs: wait }
}

function describe(value: unknown): string {
  if (typeof value === 'string') return `'${value.slice(0, 40)}'`
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value)
  return value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value
}
