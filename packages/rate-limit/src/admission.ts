import { abortReason, type Clock, type Logger, ToolError } from '@shallot/core'
import { type AbortSource, onAbort, startTimer } from '@shallot/core/kit'
import type { RateDecision, RateRule } from './gcra.js'
import type { RateLimitStore } from './rate-limit-store.js'

/** What a layer's call hands the admission: its clock, its logger and the signal it may stop on. */
export interface Caller {
  readonly clock: Clock
  readonly log: Logger
  readonly signal: AbortSource
}

/** How the store's failure is answered: the option `onStoreFailure`. */
export type StoreFailureMode = 'open' | 'closed'

/** The store failed and the layer fails open: the call goes through unlimited. */
export const STORE_FAILED_OPEN = Object.freeze({ admitted: true, waitMs: 0, storeFailed: true }) as RateDecision & {
  readonly storeFailed: true
}

const isPromise = <T>(value: T | Promise<T>): value is Promise<T> => typeof (value as { then?: unknown })?.then === 'function'

/** The soft refusal of a call whose store failed, when the layer fails closed: the store's own ToolError, or one like it. */
export function storeUnavailable(err: unknown): ToolError {
  if (ToolError.is(err) && err.code === 'store_unavailable') return err
  const why = err instanceof Error ? err.message : String(err)
  return new ToolError('store_unavailable', `The rate limit store failed: ${why}.`, {
    category: 'transient',
    retryable: true,
    safeToRepeat: true,
    hint: 'the call did not run; try again in a moment',
    cause: err,
  })
}

/** Races a store's answer against `timeoutMs` on the caller's clock and the caller's signal, leaving no timer or listener. */
function bounded(caller: Caller, answer: Promise<RateDecision>, timeoutMs: number): Promise<RateDecision> {
  return new Promise<RateDecision>((resolve, reject) => {
    let settled = false
    const finish = (then: () => void) => {
      if (settled) return
      settled = true
      cancelTimer()
      off()
      then()
    }
    const cancelTimer = startTimer(caller.clock, timeoutMs, () => finish(() => reject(new Error(`no answer within ${timeoutMs} ms`))))
    const off = onAbort(caller.signal, () => finish(() => reject(abortReason(caller.signal))))
    answer.then(
      (decision) => finish(() => resolve(decision)),
      (err: unknown) => finish(() => reject(err)),
    )
  })
}

/** A decision as the store gave it, checked: a store that answers garbage has failed. */
function checked(decision: unknown): RateDecision {
  const d = decision as Partial<RateDecision> | null | undefined
  if (typeof d !== 'object' || d === null || typeof d.admitted !== 'boolean' || typeof d.waitMs !== 'number' || !(d.waitMs >= 0)) {
    throw new TypeError(`the store answered ${JSON.stringify(decision) ?? String(decision)}, not { admitted, waitMs }`)
  }
  return d as RateDecision
}

/**
 * Asks the store for one call. A synchronous store answers synchronously (no promise, no timer); an async
 * one is bounded by `timeoutMs` and the caller's signal. A store that throws, rejects, is late or answers
 * garbage is failed: open gives {@link STORE_FAILED_OPEN}, closed throws the soft `store_unavailable`.
 * The caller's own cancellation is never a store failure: it throws the abort's reason.
 */
export function decide(
  caller: Caller,
  store: RateLimitStore,
  key: string,
  rule: RateRule,
  mode: StoreFailureMode,
  timeoutMs: number,
): RateDecision | Promise<RateDecision> {
  const failed = (err: unknown): RateDecision => {
    if (caller.signal.aborted) throw abortReason(caller.signal)
    caller.log.warn(
      { key, err, onStoreFailure: mode },
      `rate limit store failed; the call is ${mode === 'open' ? 'let through' : 'refused'}`,
    )
    if (mode === 'closed') throw storeUnavailable(err)
    return STORE_FAILED_OPEN
  }
  let answer: RateDecision | Promise<RateDecision>
  try {
    answer = store.acquire(key, rule, caller.clock.now())
  } catch (err) {
    return failed(err)
  }
  if (!isPromise(answer)) {
    try {
      return checked(answer)
    } catch (err) {
      return failed(err)
    }
  }
  return bounded(caller, answer, timeoutMs).then(checked).then(undefined, failed)
}

/**
 * Waits `ms` on the caller's clock, or rejects with the abort's reason the moment the caller's signal
 * aborts; either way the timer and the listener are gone when it settles.
 */
export function waitTurn(caller: Caller, ms: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let off: () => void = () => {}
    const cancelTimer = startTimer(caller.clock, ms, () => {
      off()
      resolve()
    })
    off = onAbort(caller.signal, () => {
      cancelTimer()
      reject(abortReason(caller.signal))
    })
  })
}
