import { setMaxListeners } from 'node:events'
import { onAbort } from './channel.js'
import type { DeferredSignal } from './types.js'

const noop = () => {}

// The stop behind each real signal a RunStop made: a call handed that signal follows the stop instead.
const stopOfSignal = new WeakMap<AbortSignal, RunStop>()

/**
 * What to follow for `signal`: the {@link RunStop} it came from when it is one's (a turn's stop
 * handed to the stack as a dispatch signal), so each call adds a callback to a list instead of an
 * 'abort' listener to the signal; else the signal itself.
 */
export function followed(signal: AbortSignal): AbortSignal | RunStop {
  return stopOfSignal.get(signal) ?? signal
}

/**
 * The signal of an agent run its caller can cancel: it aborts when the caller's signal does, or
 * when a turn's hard error stops the run (`abort`). Every call of the run follows it, and it is a
 * plain list of callbacks until somebody reads `signal`: an `AbortController` per run, and an
 * 'abort' listener added and removed on it by every call, cost more than the run's tool call.
 *
 * It follows the caller's signal from the start (one listener on it for the run's life) and stops
 * following it at `close()`, when the run ends, so a long-lived caller signal keeps nothing.
 */
export class RunStop implements DeferredSignal {
  aborted = false
  reason: unknown = undefined
  #controller: AbortController | undefined = undefined
  #callbacks: (() => void)[] = []
  #unfollow: () => void = noop

  constructor(parent: AbortSignal | undefined) {
    // A parent that has already aborted calls back at once, before onAbort returns: the stop is
    // aborted (and closed) then, and there is nothing to unfollow.
    if (parent !== undefined) this.#unfollow = onAbort(parent, () => this.abort(parent.reason))
  }

  /** The real signal, created once, already aborted if the run was stopped. */
  get signal(): AbortSignal {
    let controller = this.#controller
    if (controller === undefined) {
      controller = new AbortController()
      // Layers that wait abortably (a retry's backoff) listen on it directly; a wide turn must not warn at 11.
      setMaxListeners(0, controller.signal)
      if (this.aborted) controller.abort(this.reason)
      this.#controller = controller
      stopOfSignal.set(controller.signal, this)
    }
    return controller.signal
  }

  onAbort(callback: () => void): () => void {
    if (this.aborted) {
      callback()
      return noop
    }
    const callbacks = this.#callbacks
    callbacks.push(callback)
    return () => {
      const index = callbacks.indexOf(callback)
      if (index >= 0) callbacks.splice(index, 1)
    }
  }

  /** Stops the run with `reason`: every follower hears it once, in the order they started following. */
  abort(reason: unknown): void {
    if (this.aborted) return
    this.aborted = true
    this.reason = reason
    this.close()
    this.#controller?.abort(reason)
    const callbacks = this.#callbacks
    this.#callbacks = []
    for (const callback of callbacks) {
      try {
        callback()
      } catch {
        // One follower's failure must not keep the others from hearing that the run stopped.
      }
    }
  }

  /** The run ended: stop following the caller's signal. */
  close(): void {
    this.#unfollow()
    this.#unfollow = noop
  }
}

/** Where dispatch options carry a {@link RunStop}, for a stack that follows it without making it real. */
export const DISPATCH_STOP: unique symbol = Symbol('shallot.dispatchStop')

interface StopOptions {
  readonly [DISPATCH_STOP]: RunStop
}

function stopSignal(this: StopOptions): AbortSignal {
  return this[DISPATCH_STOP].signal
}

/**
 * Dispatch options for the calls of one turn on `stop`: core's stack follows the stop itself; a
 * stack of another make reads `signal`, an own accessor (a spread copy keeps it), and gets the
 * stop's real signal.
 */
export function stopOptions<R>(run: R, stop: RunStop): { run: R; signal: AbortSignal } {
  const options = { run, [DISPATCH_STOP]: stop }
  ;(options as unknown as { __defineGetter__(key: string, getter: () => unknown): void }).__defineGetter__('signal', stopSignal)
  return options as unknown as { run: R; signal: AbortSignal }
}

/** The stop dispatch options carry, if {@link stopOptions} made them. */
export function stopOf(options: object): RunStop | undefined {
  return (options as Partial<StopOptions>)[DISPATCH_STOP]
}
