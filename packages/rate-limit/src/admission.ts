import { abortReason, type Clock, type Logger, ToolError } from '@shallot/core'
import { onAbort, startTimer, waitMsOf } from '@shallot/core/kit'
import type { RateDecision, RateReservation, RateRule } from './gcra.js'
import type { RateLimitStore } from './rate-limit-store.js'

/** What a layer's call hands the admission: its clock, its logger and the signal it may stop on. */
export interface Caller {
  readonly clock: Clock
  readonly log: Logger
  readonly signal: AbortSignal
}

/** How the store's failure is answered: the option `onStoreFailure`. */
export type StoreFailureMode = 'open' | 'closed'

/** One limiter's bucket as admission reads it: its store, its rule, and how long and how to trust the store. */
export interface Bucket {
  readonly store: RateLimitStore
  readonly rule: RateRule
  readonly options: { readonly onStoreFailure: StoreFailureMode; readonly storeTimeoutMs: number }
}

/** The store failed and the layer fails open: the call goes through unlimited. */
export const STORE_FAILED_OPEN = Object.freeze({ admitted: true, waitMs: 0, storeFailed: true }) as RateDecision & {
  readonly storeFailed: true
}

export const isPromise = (value: unknown): value is Promise<unknown> => typeof (value as { then?: unknown })?.then === 'function'

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
export function bounded(caller: Caller, answer: Promise<unknown>, timeoutMs: number, late: (answer: unknown) => void): Promise<unknown> {
  return new Promise<unknown>((resolve, reject) => {
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

const shown = (value: unknown) =>
  typeof value === 'string' ? JSON.stringify(value) : typeof value === 'object' && value !== null ? 'an object' : String(value)

/**
 * A decision as the store gave it, each field read once: a store that answers garbage has failed. Garbage
 * is anything but an object whose `admitted` is a boolean and whose `waitMs` is a finite number of 0 ms or
 * more (`NaN`, `±Infinity`, `-1`, `'5'`, `null`), and an answer whose fields throw when read.
 */
function readDecision(answer: unknown): RateDecision {
  if (typeof answer !== 'object' || answer === null) throw new TypeError(`the store answered ${shown(answer)}, not { admitted, waitMs }`)
  const { admitted, waitMs, reservation } = answer as Record<string, unknown>
  const ms = waitMsOf(waitMs)
  if (typeof admitted !== 'boolean' || ms === undefined) {
    throw new TypeError(
      `the store answered { admitted: ${shown(admitted)}, waitMs: ${shown(waitMs)} }, not a boolean and a finite wait of 0 ms or more`,
    )
  }
  return reservation === undefined ? { admitted, waitMs: ms } : { admitted, waitMs: ms, reservation: reservation as RateReservation }
}

/**
 * Asks the store for one call. A synchronous store answers synchronously (no promise, no timer); an async
 * one is bounded by `timeoutMs` and the caller's signal. A store that throws, rejects, is late or answers
 * garbage is failed: open gives {@link STORE_FAILED_OPEN}, closed throws the soft `store_unavailable`.
 * A wait the store proposes is checked against the rule before anyone sleeps on it: an admission past
 * `maxWaitMs` is a refusal (its place given back), and a refusal never says to come back later than an
 * honest store could (`maxWaitMs` and one interval), whatever the store's clock says.
 * The caller's own cancellation is never a store failure: it throws the abort's reason. A place reserved
 * by an answer that came too late (after the cancellation or `timeoutMs`) is given back.
 */
export function decide(bucket: Bucket, caller: Caller, key: string): RateDecision | Promise<RateDecision> {
  const { store, rule } = bucket
  const { onStoreFailure: mode, storeTimeoutMs: timeoutMs } = bucket.options
  const failed = (err: unknown): RateDecision => {
    if (caller.signal.aborted) throw abortReason(caller.signal)
    caller.log.warn(
      { key, err, onStoreFailure: mode },
      `rate limit store failed; the call is ${mode === 'open' ? 'let through' : 'refused'}`,
    )
    if (mode === 'closed') throw storeUnavailable(err)
    return STORE_FAILED_OPEN
  }
  // An honest store (one clock, GCRA) never proposes more: a refusal comes due within maxWaitMs and one interval
  // (give or take the millisecond every wait is rounded to).
  const longest = rule.maxWaitMs + rule.intervalMs
  const checked = (answer: unknown): RateDecision => {
    const decision = readDecision(answer)
    if (decision.admitted ? decision.waitMs <= rule.maxWaitMs : decision.waitMs <= longest + 1) return decision
    caller.log.warn(
      { key, admitted: decision.admitted, waitMs: decision.waitMs, maxWaitMs: rule.maxWaitMs },
      'rate limit store proposed a wait past what maxWaitMs allows; the call is refused',
    )
    if (decision.admitted) giveBack(bucket, caller, key, decision.reservation)
    return { admitted: false, waitMs: Math.min(decision.waitMs, longest) }
  }
  let answer: unknown
  try {
    answer = store.acquire(key, rule, caller.clock.now())
    if (!isPromise(answer)) return checked(answer)
  } catch (err) {
    return failed(err)
  }
  // A reservation that arrives after its caller stopped waiting for it (cancelled, or the store was late) is given back.
  const late = (lateAnswer: unknown) => {
    try {
      giveBack(bucket, caller, key, readDecision(lateAnswer).reservation)
    } catch {
      // A late answer that is garbage names no place to give back.
    }
  }
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
  readonly bucket: Bucket
  readonly caller: Caller
  readonly key: string
  readonly reservation: RateReservation
}

let pending: Refund[] = []

/**
 * Gives a cancelled waiter's reserved place back through the store's optional `refund`, never throwing
 * and never awaited: a store that throws or rejects keeps the place, logged (it only admits fewer calls).
 * Refunds asked in one tick (a run's cancellation ends all its waiters at once) go together, latest
 * reservation first and one after another, so a queue's tail is given back whole: a store only gives
 * back a key's last reservation. The next one is not held up longer than `timeoutMs` by a silent store.
 */
export function giveBack(bucket: Bucket, caller: Caller, key: string, reservation: RateReservation | undefined): void {
  if (typeof reservation !== 'object' || reservation === null || typeof bucket.store.refund !== 'function') return
  if (pending.push({ bucket, caller, key, reservation }) === 1) queueMicrotask(flushRefunds)
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

function refundOne({ bucket, caller, key, reservation }: Refund): unknown {
  const { store, rule } = bucket
  const timeoutMs = bucket.options.storeTimeoutMs
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
