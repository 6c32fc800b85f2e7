import type { DeferredSignal } from '@shallot/core'

/**
 * The signal the timeout hands to the inner layers, created only if somebody reads it. A class, so
 * every attempt's instance shares one shape (an object literal with getters would not). Core follows
 * it through `onAbort` without creating it, so a tool that reads its signal costs one controller.
 */
export class DeadlineSignal implements DeferredSignal {
  aborted = false
  reason: unknown = undefined
  #controller: AbortController | undefined
  #waiting: (() => void)[] | undefined

  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController()
      if (this.aborted) this.#controller.abort(this.reason)
    }
    return this.#controller.signal
  }

  onAbort(callback: () => void): () => void {
    if (this.aborted) {
      callback()
      return noop
    }
    if (this.#waiting === undefined) this.#waiting = []
    const waiting = this.#waiting
    waiting.push(callback)
    return () => {
      const index = waiting.indexOf(callback)
      if (index >= 0) waiting.splice(index, 1)
    }
  }

  abort(why: unknown): void {
    if (this.aborted) return
    this.aborted = true
    this.reason = why
    this.#controller?.abort(why)
    const waiting = this.#waiting
    this.#waiting = undefined
    if (waiting === undefined) return
    for (const callback of waiting) {
      try {
        callback()
      } catch {
        // A follower's failure must not keep the others (or the deadline) from taking effect.
      }
    }
  }
}

const noop = () => {}
