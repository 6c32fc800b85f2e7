import { abortReason, type ModelContext, ToolError } from '@shallot/core'
import { waitMsOf } from '@shallot/core/kit'
import { bounded, type Caller, isPromise, type StoreFailureMode, storeUnavailable, waitTurn } from './admission.js'
import { MAX_PUSHBACK_MS, type PushbackStore } from './pushback-store.js'

/**
 * The share of the rest each held-back call adds at random, so the calls a pushback held do not all
 * reach the provider the moment it ends: a 30 s hold lets them go over the 3 s after it.
 */
export const PUSHBACK_JITTER = 0.1

/** The model side's shared pushback: its store, and the layer's bounds on waiting and on the store. */
export interface Pushback {
  readonly store: PushbackStore
  readonly maxWaitMs: number
  readonly onStoreFailure: StoreFailureMode
  readonly storeTimeoutMs: number
}

const shown = (value: unknown) =>
  typeof value === 'string' ? JSON.stringify(value) : typeof value === 'object' && value !== null ? 'an object' : String(value)

/**
 * How much longer `key` is held, as the store says; 0 when it is not. A synchronous store answers
 * synchronously; an async one is bounded by `storeTimeoutMs` and the caller's signal. A store that
 * throws, rejects, is late or answers anything but a finite number from 0 to {@link MAX_PUSHBACK_MS}
 * (`NaN`, `Infinity`, `1e15`, `-1`, `'5'`) has failed: `open` reads it as not held, `closed` refuses.
 */
function heldFor(p: Pushback, caller: Caller, key: string): number | Promise<number> {
  const mode = p.onStoreFailure
  const failed = (err: unknown): number => {
    if (caller.signal.aborted) throw abortReason(caller.signal)
    caller.log.warn({ key, err, onStoreFailure: mode }, `pushback store failed; the call is ${mode === 'open' ? 'let through' : 'refused'}`)
    if (mode === 'closed') throw storeUnavailable(err)
    return 0
  }
  const read = (answer: unknown): number => {
    const ms = waitMsOf(answer)
    if (ms === undefined || ms > MAX_PUSHBACK_MS) {
      throw new TypeError(`the pushback store answered ${shown(answer)}, not a wait of 0 to ${MAX_PUSHBACK_MS} ms`)
    }
    return ms
  }
  let answer: unknown
  try {
    answer = p.store.heldFor(key, caller.clock.now())
    if (!isPromise(answer)) return read(answer)
  } catch (err) {
    return failed(err)
  }
  return bounded(caller, answer, p.storeTimeoutMs, () => {})
    .then(read)
    .then(undefined, failed)
}

/** The refusal of a call whose model the fleet was told to leave alone for longer than the layer may wait. */
function heldBackError(model: string, key: string, retryAfterMs: number): ToolError {
  return new ToolError(
    'rate_limited',
    `model '${model}' is held back: its provider asked for a pause; the next call goes in ${Math.round(retryAfterMs / 100) / 10}s`,
    {
      category: 'transient',
      // As the limit's own refusal: the layer waited what it may, so a retry layer must not spin on it and a
      // breaker must not count it; an agent with park parks on it when it is long, a fallback moves on.
      retryable: false,
      safeToRepeat: true,
      retryAfterMs,
      hint: 'the call did not run; the provider pushed back on a call of this model made elsewhere',
      details: { key, pushback: true },
    },
  )
}

/**
 * Before a send: while `key` is held, the call waits the rest of the hold and a jitter (up to
 * {@link PUSHBACK_JITTER} of the rest) when that is within `maxWaitMs`, abortably; otherwise it is refused
 * before the provider is asked with a transient `rate_limited` (not retryable) whose `retryAfterMs` is that wait.
 */
export async function holdBack(p: Pushback, ctx: ModelContext, caller: Caller, key: string): Promise<void> {
  const answer = heldFor(p, caller, key)
  const held = typeof answer === 'number' ? answer : await answer
  if (held <= 0) return
  const draw = ctx.random()
  const waitMs = Math.ceil(held * (1 + PUSHBACK_JITTER * (draw >= 0 && draw < 1 ? draw : 0)))
  const model = ctx.model.name
  if (waitMs > p.maxWaitMs) {
    ctx.log.warn({ model, key, retryAfterMs: waitMs }, "model call held back by its provider's pushback")
    throw heldBackError(model, key, waitMs)
  }
  ctx.log.info({ model, key, waitMs }, "model call waits out its provider's pushback")
  await waitTurn(caller, waitMs)
}

/**
 * The pause a failure asks of everyone: a transient ToolError with the provider's HTTP status (its
 * `details.status`, as the error classifier and `aiSdkModel` leave a 429 or a 503) and a `retryAfterMs`
 * above 0, held at most {@link MAX_PUSHBACK_MS}. Undefined for every other failure, the layers' own
 * refusals included: only the provider speaks for the provider.
 */
export function pushbackOf(err: unknown): number | undefined {
  if (!ToolError.is(err) || err.category !== 'transient') return undefined
  const status = err.details?.status
  if (typeof status !== 'number' || status < 400 || status > 599) return undefined
  const ms = waitMsOf(err.retryAfterMs)
  return ms === undefined || ms <= 0 ? undefined : Math.min(ms, MAX_PUSHBACK_MS)
}

/**
 * After a failed send: holds `key` for the failure's pushback, so the fleet's next calls wait for it.
 * Bounded by `storeTimeoutMs`; a store that fails is logged and changes nothing else: the call's own
 * failure goes on as it came.
 */
export function learn(p: Pushback, caller: Caller, key: string, err: unknown): Promise<void> | undefined {
  const ms = pushbackOf(err)
  if (ms === undefined) return undefined
  const failed = (storeErr: unknown) =>
    caller.log.warn({ key, err: storeErr }, 'pushback store failed to hold the key; the other workers learn the pushback by themselves')
  caller.log.info({ key, holdMs: ms }, "provider's pushback held for every worker")
  try {
    const answer = p.store.hold(key, ms, caller.clock.now())
    if (isPromise(answer)) return bounded(caller, answer, p.storeTimeoutMs, () => {}).then(() => undefined, failed)
  } catch (storeErr) {
    failed(storeErr)
  }
  return undefined
}
