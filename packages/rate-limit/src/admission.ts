import { abortReason, type Clock, type Logger, ToolError } from '@shallot/core'
import { type AbortSource, onAbort, startTimer } from '@shallot/core/kit'
import type { RateDecision, RateReservation, RateRule } from './gcra.js'
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

/**
 * Races a store's answer against `timeoutMs` on the caller's clock and the caller's signal, leaving no timer
 * or listener. An answer that comes after the race was lost is handed to `late` (its place goes unused).
 */
function bounded(caller: Caller, answer: Promise<RateDecision>, timeoutMs: number, late: (d: RateDecision) => void): Promise<RateDecision> {
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
      (decision) => (settled ? late(decision) : finish(() => resolve(decision))),
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
 * The caller's own cancellation is never a store failure: it throws the abort's reason. A place reserved
 * by an answer that came too late (after the cancellation or `timeoutMs`) is given back.
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
  // A reservation that arrives after its caller stopped waiting for it (cancelled, or the store was late) is given back.
  const late = (d: RateDecision) => giveBack(caller, store, key, rule, (d as Partial<RateDecision> | null)?.reservation, timeoutMs)
  return bounded(caller, answer, timeoutMs, late).then(checked).then(undefined, failed)
}

/**
 * Waits `ms` on the caller's clock, or rejects with the abort's reason the moment the caller's signal
 * aborts; either way the timer and the listener are gone when it settles.
 */
export function waitTurn(caller: Caller, ms: number, onCancel: () => void = () => {}): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let off: () => void = () => {}
    const cancelTimer = startTimer(caller.clock, ms, () => {
      off()
      resolve()
    })
    off = onAbort(caller.signal, () => {
      cancelTimer()
      onCancel()
      reject(abortReason(caller.signal))
    })
  })
}

interface Refund {
  readonly caller: Caller
  readonly store: RateLimitStore
  readonly key: string
  readonly rule: RateRule
  readonly reservation: RateReservation
  readonly timeoutMs: number
}

let pending: Refund[] = []

/**
 * Gives a cancelled waiter's reserved place back through the store's optional `refund`, never throwing
 * and never awaited: a store that throws or rejects keeps the place, logged (it only admits fewer calls).
 * Refunds asked in one tick (a run's cancellation ends all its waiters at once) go together, latest
 * reservation first and one after another, so a queue's tail is given back whole: a store only gives
 * back a key's last reservation. The next one is not held up longer than `timeoutMs` by a silent store.
 */
export function giveBack(
  caller: Caller,
  store: RateLimitStore,
  key: string,
  rule: RateRule,
  reservation: RateReservation | undefined,
  timeoutMs: number,
): void {
  if (typeof reservation !== 'object' || reservation === null || typeof store.refund !== 'function') return
  if (pending.push({ caller, store, key, rule, reservation, timeoutMs }) === 1) queueMicrotask(flushRefunds)
}

function flushRefunds(): void {
  const batch = pending.sort((a, b) => b.reservation.tat - a.reservation.tat)
  pending = []
  let chain: Promise<unknown> | undefined
  for (const refund of batch) {
    if (chain === undefined) {
      const answer = refundOne(refund)
      if (isPromise(answer)) chain = answer
    } else chain = chain.then(() => refundOne(refund))
  }
}

function refundOne({ caller, store, key, rule, reservation, timeoutMs }: Refund): unknown {
  let settled = false
  const failed = (err: unknown) => {
    if (settled) return
    settled = true
    caller.log.warn({ key, err }, "rate limit store failed to give a cancelled call's place back; the place stays taken")
  }
  let answer: boolean | Promise<boolean> | undefined
  try {
    answer = store.refund?.(key, rule, reservation, caller.clock.now())
  } catch (err) {
    failed(err)
    return undefined
  }
  if (!isPromise(answer)) return answer
  const sent = answer
  return new Promise<void>((resolve) => {
    const cancelTimer = startTimer(caller.clock, timeoutMs, () => {
      failed(new Error(`no answer within ${timeoutMs} ms`))
      resolve()
    })
    const done = () => {
      settled = true
      cancelTimer()
      resolve()
    }
    sent.then(done, (err: unknown) => {
      failed(err)
      done()
    })
  })
}
