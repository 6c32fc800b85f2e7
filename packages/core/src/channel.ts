import { setMaxListeners } from 'node:events'
import { MiddlewareUsageError } from './compose.js'
import { LoopError, ToolError, type ToolErrorJSON } from './errors.js'
import type { DeferredSignal } from './types.js'

/**
 * The library's one signal that never aborts: what a run without a signal of its own carries. Code
 * that meets it knows there is nothing to listen to, so a call outside any cancellable run pays
 * for no listener and no combined signal.
 *
 * @example
 * createRun().signal === neverAborted // true
 */
export const neverAborted: AbortSignal = new AbortController().signal
// Nothing ever listens through this signal for real, but third-party code may; it must not warn at 11.
setMaxListeners(0, neverAborted)

/** A real signal, or one a layer promises and creates only when read. */
export type AbortSource = AbortSignal | DeferredSignal

/**
 * The error a layer or tool should see when `signal` has aborted: its own reason if it is one of
 * ours (a deadline's ToolError, the LoopError that ended the run), else cancellation.
 *
 * @example
 * if (signal.aborted) throw abortReason(signal)
 */
export function abortReason(signal: { readonly reason: unknown }): ToolError | LoopError {
  const reason: unknown = signal.reason
  if (ToolError.is(reason) || LoopError.is(reason)) return reason
  return new LoopError('cancelled', 'the run was cancelled', { cause: reason })
}

const noop = () => {}

/**
 * One 'abort' listener per signal, however many calls wait on it: every concurrent call of a run
 * subscribes here instead of on the signal itself, so fifty of them neither warn about a leak nor
 * need a combined signal each. The listener goes when its last subscriber does, so a long-lived
 * caller's signal keeps nothing of finished calls.
 */
class Waiters {
  readonly #signal: AbortSignal
  readonly #callbacks = new Map<() => void, () => void>()
  #listening = false

  constructor(signal: AbortSignal) {
    this.#signal = signal
  }

  add(callback: () => void): () => void {
    const off = () => this.#remove(off)
    this.#callbacks.set(off, callback)
    if (!this.#listening) {
      this.#listening = true
      // Not `once`: it costs more, and #fire removes the listener itself.
      this.#signal.addEventListener('abort', this.#fire)
    }
    return off
  }

  #remove(off: () => void): void {
    if (!this.#callbacks.delete(off) || this.#callbacks.size > 0 || !this.#listening) return
    this.#listening = false
    this.#signal.removeEventListener('abort', this.#fire)
  }

  readonly #fire = () => {
    this.#listening = false
    this.#signal.removeEventListener('abort', this.#fire)
    const callbacks = [...this.#callbacks.values()]
    this.#callbacks.clear()
    for (const callback of callbacks) {
      try {
        callback()
      } catch {
        // One subscriber's failure must not keep the others from hearing the abort.
      }
    }
  }
}

const waiters = new WeakMap<AbortSignal, Waiters>()

function subscribe(signal: AbortSignal, callback: () => void): () => void {
  let list = waiters.get(signal)
  if (list === undefined) {
    list = new Waiters(signal)
    waiters.set(signal, list)
  }
  return list.add(callback)
}

/**
 * Calls `onAbort` once when `source` aborts (at once if it already has). Returns the function that
 * unsubscribes; call it on every exit path. Costs nothing for {@link neverAborted}, and a deferred
 * signal that can report its own abort is never made real.
 *
 * @example
 * const off = onAbort(ctx.currentSignal(), () => reject(abortReason(ctx.currentSignal())))
 * try { return await work } finally { off() }
 */
export function onAbort(source: AbortSource, callback: () => void): () => void {
  if (source === neverAborted) return noop
  if (source.aborted) {
    callback()
    return noop
  }
  if (source instanceof AbortSignal) return subscribe(source, callback)
  if (typeof source.onAbort === 'function') return source.onAbort(callback)
  return subscribe(source.signal, callback)
}

/** Waits for `work`, but stops waiting as soon as `source` aborts; a late settle is dropped, never unhandled. */
export function untilAborted<T>(work: PromiseLike<T>, source: AbortSource): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const off = onAbort(source, () => reject(abortReason(source)))
    // Promise.resolve: a hostile thenable whose then() throws becomes a rejection that still unsubscribes.
    Promise.resolve(work).then(
      (value) => {
        off()
        resolve(value)
      },
      (err: unknown) => {
        off()
        reject(err)
      },
    )
  })
}

/** Whether `source` may still abort: false for {@link neverAborted}. */
export function canAbort(source: AbortSource): boolean {
  return source !== neverAborted
}

/**
 * The one soft→hard decision: `undefined` when a thrown value is a soft ToolError the model reads,
 * else the LoopError that ends the run. An aborted call ends with its abort reason when that is a
 * LoopError (cancellation wins over whatever the layers made of it); a MiddlewareUsageError or a
 * foreign throw that no layer caught is `tool_crashed`.
 *
 * @example
 * const hard = toHard(err, ctx.currentSignal(), call.name)
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
