import { neverAborted } from './cancellation.js'
import { LoopError } from './errors.js'
import { newRunId } from './ids.js'
import type { Budget, Json, RunContext } from './types.js'

/** A step budget that counts what it spends and refuses past `maxSteps`. */
export class StepBudget implements Budget {
  constructor(
    readonly maxSteps = Number.POSITIVE_INFINITY,
    public used = 0,
  ) {}

  get remaining(): number {
    return Math.max(0, this.maxSteps - this.used)
  }

  spend(what: string): void {
    if (this.used >= this.maxSteps) {
      throw new LoopError('budget_exhausted', `step budget exhausted: all ${this.maxSteps} steps are spent (next was ${what})`, {
        details: { maxSteps: this.maxSteps, used: this.used, next: what },
      })
    }
    this.used++
  }
}

/** The mutable run record behind the read-only {@link RunContext} that layers see. */
export interface MutableRun extends RunContext {
  turn: number
  readonly budget: StepBudget
}

export interface CreateRunOptions {
  id?: string
  signal?: AbortSignal | undefined
  maxSteps?: number
  stepsUsed?: number
  state?: Record<string, Json>
  turn?: number
}

/**
 * A run context for calling `stack.dispatch` outside an agent, e.g. to share per-run counters
 * (stuck-loop, run-scoped breakers) across several calls.
 *
 * @example
 * const run = createRun({ maxSteps: 20 })
 * await stack.dispatch(call, { run })
 */
export function createRun(options: CreateRunOptions = {}): MutableRun {
  return {
    id: options.id ?? newRunId(),
    turn: options.turn ?? 0,
    state: options.state ?? {},
    budget: new StepBudget(options.maxSteps, options.stepsUsed),
    signal: options.signal ?? neverAborted,
  }
}
