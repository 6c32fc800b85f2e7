import { type AbortSource, onAbort } from './channel.js'
import { ToolError } from './errors.js'
import type { DeferredSignal } from './types.js'

const noop = () => {}

/** The reason a call's or an attempt's signal carries once it has settled: whatever it left running is cancelled. */
export const SETTLED = new ToolError('cancelled', 'the call has settled; work it left running on its signal is cancelled', {
  category: 'recoverable',
  retryable: false,
  safeToRepeat: false,
})

/**
 * A signal that aborts when either source does, or when its owner closes it, and that becomes a
 * real AbortSignal only if somebody reads `signal`. It replaces `AbortSignal.any` on every call:
 * nothing is combined until needed, and once the owner settles, `close()` cancels what was left
 * running on it and unsubscribes from the sources, so a long-lived run signal keeps nothing.
 */
export class LinkedSignal implements DeferredSignal {
  readonly #first: AbortSource
  readonly #second: AbortSource | undefined
  #aborted = false
  #reason: unknown = undefined
  #controller: AbortController | undefined
  #off: (() => void) | undefined

  constructor(first: AbortSource, second?: AbortSource) {
    this.#first = first
    this.#second = second
  }

  get aborted(): boolean {
    return this.#aborted || this.#first.aborted || this.#second?.aborted === true
  }

  get reason(): unknown {
    if (this.#aborted) return this.#reason
    if (this.#first.aborted) return this.#first.reason
    return this.#second?.aborted === true ? this.#second.reason : undefined
  }

  get signal(): AbortSignal {
    let controller = this.#controller
    if (controller === undefined) {
      controller = new AbortController()
      this.#controller = controller
      // Read after it settled (or after a source aborted): the signal is born aborted, with that reason.
      if (this.#aborted) controller.abort(this.#reason)
      else if (this.aborted) this.#abort(this.reason)
      else this.#off = this.#follow(() => this.#abort(this.reason))
    }
    return controller.signal
  }

  onAbort(callback: () => void): () => void {
    if (this.#aborted) {
      callback()
      return noop
    }
    return this.#follow(callback)
  }

  /** Settles the signal: aborts it with `reason` unless it already aborted, and stops following the sources. */
  close(reason: unknown = SETTLED): void {
    this.#abort(this.aborted ? this.reason : reason)
  }

  #abort(reason: unknown): void {
    if (this.#aborted) return
    this.#aborted = true
    this.#reason = reason
    this.#off?.()
    this.#off = undefined
    this.#controller?.abort(reason)
  }

  #follow(callback: () => void): () => void {
    const second = this.#second
    if (second === undefined) return onAbort(this.#first, callback)
    let live = true
    let offFirst = noop
    let offSecond = noop
    const once = () => {
      if (!live) return
      live = false
      offFirst()
      offSecond()
      callback()
    }
    offFirst = onAbort(this.#first, once)
    if (live) offSecond = onAbort(second, once)
    return () => {
      live = false
      offFirst()
      offSecond()
    }
  }
}
