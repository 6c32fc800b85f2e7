import { abortReason, type DeferredSignal, type ToolContext, type ToolOutput } from '@shallot/core'
import { type AbortSource, onAbort } from '@shallot/core/kit'

const noop = () => {}

/**
 * Emits on behalf of a caller from a callback (an abort, another caller's settle): a throwing logger
 * or listener must not strand the caller or the others.
 */
export function tell(ctx: ToolContext, type: string, fields: Record<string, unknown>): void {
  try {
    ctx.emit(type, fields)
  } catch (err) {
    try {
      ctx.log.warn({ err, type }, 'coalesce: an event listener threw')
    } catch {
      // Nowhere left to report to.
    }
  }
}

/**
 * The shared execution's signal, created only if something reads it: the happy path (every caller
 * stays) allocates no AbortController. The layer that hands it inward stops waiting itself (each
 * caller races its own signal), so the terminal need not watch it (decision 211).
 */
export class FlightSignal implements DeferredSignal {
  #controller: AbortController | undefined
  #aborted = false
  #reason: unknown
  #listeners: Set<() => void> | undefined

  get aborted(): boolean {
    return this.#aborted
  }

  get reason(): unknown {
    return this.#reason
  }

  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController()
      if (this.#aborted) this.#controller.abort(this.#reason)
    }
    return this.#controller.signal
  }

  onAbort(callback: () => void): () => void {
    if (this.#aborted) {
      callback()
      return noop
    }
    const listeners = this.#listeners ?? new Set()
    this.#listeners = listeners
    listeners.add(callback)
    return () => listeners.delete(callback)
  }

  abort(reason: unknown): void {
    if (this.#aborted) return
    this.#aborted = true
    this.#reason = reason
    this.#controller?.abort(reason)
    const listeners = this.#listeners
    this.#listeners = undefined
    for (const callback of listeners ?? []) {
      try {
        callback()
      } catch {
        // A listener of an execution nobody waits for any more has no one to tell.
      }
    }
  }
}

/**
 * One shared execution: the first caller's inner layers and tool, run on a signal of its own that
 * aborts only when every caller has gone. `callers` counts the callers still waiting for it.
 */
export class Flight {
  callers = 0
  readonly signal = new FlightSignal()
  #promise: Promise<ToolOutput> | undefined

  constructor(private readonly forget: (flight: Flight) => void) {}

  /** The execution, once started: forgotten the moment it settles, so only running calls are ever shared. */
  set running(run: Promise<ToolOutput>) {
    const promise = run.finally(() => this.forget(this))
    // Nobody may be left to read a failure: the last caller gone, the execution aborted.
    promise.catch(noop)
    this.#promise = promise
  }

  /**
   * One caller waits for the shared result, or for its own signal (`source`, the signal it came
   * with), whichever comes first. A caller whose signal aborts leaves at once with its own abort
   * reason; the execution goes on for the others, and is aborted when the last one leaves.
   */
  wait(ctx: ToolContext, source: AbortSource): Promise<ToolOutput> {
    this.callers++
    return new Promise<ToolOutput>((resolve, reject) => {
      let waiting = true
      const off = onAbort(source, () => {
        if (!waiting) return
        waiting = false
        const left = --this.callers
        reject(abortReason(source))
        if (left === 0) {
          this.forget(this)
          this.signal.abort(abortReason(source))
        }
        tell(ctx, 'coalesce.left', { callers: left, stopped: left === 0 })
      })
      ;(this.#promise as Promise<ToolOutput>).then(
        (output) => {
          if (!waiting) return
          waiting = false
          this.callers--
          off()
          resolve(output)
        },
        (err: unknown) => {
          if (!waiting) return
          waiting = false
          this.callers--
          off()
          reject(err)
        },
      )
    })
  }
}
