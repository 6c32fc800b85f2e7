import type { DeferredSignal } from '@shallot/core'

const NOT_LOST = Symbol('not lost')

/**
 * The signal of the first attempt: aborted when the caller's signal aborts, or when a hedge wins
 * and this attempt lost. Deferred: the real AbortSignal (and its controller) exist only if
 * somebody reads `signal`, so a call that answers before the hedge delay allocates neither.
 */
export class AttemptSignal implements DeferredSignal {
  readonly #outer: AbortSignal | DeferredSignal
  #lost: unknown = NOT_LOST
  #controller: AbortController | undefined
  #signal: AbortSignal | undefined

  constructor(outer: AbortSignal | DeferredSignal) {
    this.#outer = outer
  }

  get aborted(): boolean {
    return this.#lost !== NOT_LOST || this.#outer.aborted
  }

  get reason(): unknown {
    return this.#outer.aborted ? this.#outer.reason : this.#lost === NOT_LOST ? undefined : this.#lost
  }

  get signal(): AbortSignal {
    if (this.#signal === undefined) {
      this.#controller = new AbortController()
      if (this.#lost !== NOT_LOST) this.#controller.abort(this.#lost)
      const outer = this.#outer instanceof AbortSignal ? this.#outer : this.#outer.signal
      this.#signal = AbortSignal.any([outer, this.#controller.signal])
    }
    return this.#signal
  }

  /** This attempt lost the race: abort it with `why`. */
  lose(why: unknown): void {
    if (this.#lost !== NOT_LOST) return
    this.#lost = why
    this.#controller?.abort(why)
  }
}
