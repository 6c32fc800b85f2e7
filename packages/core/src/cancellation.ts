import { setMaxListeners } from 'node:events'
import { LoopError, ToolError } from './errors.js'

const noop = () => {}

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
/** The link behind each AbortSignal a link made: whoever follows that signal follows the link's list instead. */
const linkOfSignal = new WeakMap<AbortSignal, SignalLink>()

function subscribe(signal: AbortSignal, callback: () => void): () => void {
  let list = waiters.get(signal)
  if (list === undefined) {
    list = new Waiters(signal)
    waiters.set(signal, list)
  }
  return list.add(callback)
}

/**
 * Calls `callback` once when `source` aborts (at once if it already has). Returns the function that
 * unsubscribes; call it on every exit path. Costs nothing for {@link neverAborted}; a
 * {@link SignalLink} is followed without making its AbortSignal.
 *
 * @example
 * const off = onAbort(ctx.signal, () => reject(abortReason(ctx.signal)))
 * try { return await work } finally { off() }
 */
export function onAbort(source: AbortSignal | SignalLink, callback: () => void): () => void {
  if (source === neverAborted) return noop
  if (source.aborted) {
    callback()
    return noop
  }
  if (!(source instanceof AbortSignal)) return source.onAbort(callback)
  // A signal a link made (a run's) is followed through the link: the run's calls add no listener each.
  const link = linkOfSignal.get(source)
  return link === undefined ? subscribe(source, callback) : link.onAbort(callback)
}

/** Waits for `work`, but stops waiting as soon as `source` aborts; a late settle is dropped, never unhandled. */
export function untilAborted<T>(work: PromiseLike<T>, source: AbortSignal | SignalLink): Promise<T> {
  if (source === neverAborted) return Promise.resolve(work)
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

/** The reason a call's or an attempt's signal carries once it has settled: whatever it left running is cancelled. */
export const SETTLED = new ToolError('cancelled', 'the call has settled; work it left running on its signal is cancelled', {
  category: 'recoverable',
  retryable: false,
  safeToRepeat: false,
})

/**
 * A cancellation of your own that also follows one or two parents: a layer's deadline, the attempt a
 * hedge beat, a run a hard error stopped. Hand it to the layers inside with `ctx.signal = link` and
 * give them the old signal back after; they read `ctx.signal` as always and get a real AbortSignal,
 * aborted with the link's reason. That AbortSignal is made the first time somebody reads
 * `link.signal`: on Node 20 making one costs more than a whole call through the default stack, and
 * most tools never read theirs. `abort(reason)` aborts it (a parent that aborted first keeps its
 * reason); `release()` stops following the parents once the owner is done with it.
 *
 * @example
 * const outer = ctx.signal
 * const deadline = new SignalLink(outer)
 * const cancel = startTimer(ctx.clock, 5000, () => deadline.abort(new ToolError('timeout', 'no answer in 5 s')))
 * ctx.signal = deadline
 * try { await next() } finally { cancel(); deadline.release(); ctx.signal = outer }
 */
export class SignalLink {
  #first: AbortSignal | SignalLink | undefined
  #second: AbortSignal | SignalLink | undefined
  #aborted = false
  #reason: unknown = undefined
  #controller: AbortController | undefined = undefined
  #followers: (() => void)[] | undefined = undefined
  /** Set once the link listens to its parents: from the first read of `signal` or the first follower on. */
  #unfollow: (() => void) | undefined = undefined

  constructor(first?: AbortSignal | SignalLink, second?: AbortSignal | SignalLink) {
    this.#first = first === neverAborted ? undefined : first
    this.#second = second === neverAborted ? undefined : second
  }

  get aborted(): boolean {
    return this.#aborted || this.#first?.aborted === true || this.#second?.aborted === true
  }

  get reason(): unknown {
    if (this.#aborted) return this.#reason
    return this.#first?.aborted === true ? this.#first.reason : this.#second?.aborted === true ? this.#second.reason : undefined
  }

  /** The real signal, made once: already aborted if the link is. */
  get signal(): AbortSignal {
    let controller = this.#controller
    if (controller === undefined) {
      controller = new AbortController()
      // Layers and tools may listen on it directly (a retry's backoff each): a wide turn must not warn at 11.
      setMaxListeners(0, controller.signal)
      linkOfSignal.set(controller.signal, this)
      this.#controller = controller
      if (this.#aborted) controller.abort(this.#reason)
      else this.#follow()
    }
    return controller.signal
  }

  /** Calls `callback` once when the link aborts (at once if it has); returns the function that unsubscribes. */
  onAbort(callback: () => void): () => void {
    this.#follow()
    if (this.#aborted) {
      callback()
      return noop
    }
    this.#followers ??= []
    this.#followers.push(callback)
    return () => {
      // Once aborted the list is a new one: a follower leaving while the abort is told leaves the others in place.
      const followers = this.#followers
      const index = followers === undefined ? -1 : followers.indexOf(callback)
      if (index >= 0) followers?.splice(index, 1)
    }
  }

  /** Aborts with `reason` (or with the reason of a parent that aborted first), once; every follower hears it. */
  abort(reason: unknown): void {
    if (this.#aborted) return
    const parentReason = this.reason
    this.#aborted = true
    this.#reason = parentReason ?? reason
    this.release()
    this.#controller?.abort(this.#reason)
    const followers = this.#followers
    this.#followers = undefined
    for (const follower of followers ?? []) {
      try {
        follower()
      } catch {
        // One follower's failure must not keep the others from hearing the abort.
      }
    }
  }

  /** Stops following the parents: the owner is done (a run that ended), and a long-lived parent keeps nothing of it. */
  release(): void {
    this.#unfollow?.()
    this.#unfollow = noop
    this.#first = undefined
    this.#second = undefined
  }

  #follow(): void {
    if (this.#unfollow !== undefined || this.#aborted) return
    const first = this.#first
    const second = this.#second
    let offFirst = noop
    let offSecond = noop
    // Read when called: a parent that already aborted calls back at once, and the abort releases what is set so far.
    this.#unfollow = () => {
      offFirst()
      offSecond()
    }
    if (first !== undefined) offFirst = onAbort(first, () => this.abort(first.reason))
    if (second !== undefined && !this.#aborted) offSecond = onAbort(second, () => this.abort(second.reason))
  }
}
