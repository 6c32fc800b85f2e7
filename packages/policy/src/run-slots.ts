import type { RunContext } from '@shallot/core'
import { countOf, releaseCount, takeCount } from './policy-state.js'

/** How a decision takes `maxPerRun` slots: true when the rule still has one for this call. */
export interface SlotTaker {
  take(ruleId: string, max: number): boolean
}

/**
 * The `maxPerRun` slots one call holds. A slot is taken the moment its rule is read, before any
 * await, so any number of parallel calls of a run never share the last one. The call keeps its
 * slots once it goes inward (it may reach the world, whether it then succeeds or fails); every
 * other way out (a denial, a stop for approval, a person's no, a cancellation) gives them back.
 *
 * @example
 * const slots = new RunSlots(ctx.run)
 * try {
 *   if (!slots.take('writes', 2)) throw blocked
 *   slots.keep()
 *   await next()
 * } finally {
 *   slots.release()
 * }
 */
export class RunSlots implements SlotTaker {
  readonly #run: RunContext
  readonly #held: string[] = []
  #kept = false

  constructor(run: RunContext) {
    this.#run = run
  }

  take(ruleId: string, max: number): boolean {
    if (!takeCount(this.#run, ruleId, max)) return false
    this.#held.push(ruleId)
    return true
  }

  /** The call goes inward: its slots count for good. */
  keep(): void {
    this.#kept = true
  }

  /** Gives back the slots of a call that did not go inward; nothing once it did. Safe to call twice. */
  release(): void {
    if (this.#kept) return
    for (const ruleId of this.#held.splice(0)) releaseCount(this.#run, ruleId)
  }
}

/**
 * Reads the slots without taking any: what a check that must change nothing (would this call stop
 * for a person?) sees.
 *
 * @example
 * await decide(probe, tool, peekSlots(run))
 */
export const peekSlots = (run: RunContext): SlotTaker => ({ take: (ruleId, max) => countOf(run, ruleId) < max })
