import { type AbortSource, neverAborted } from './channel.js'
import { LoopError } from './errors.js'
import { newRunId } from './ids.js'
import type { RunStop } from './run-stop.js'
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

function runSignal(this: StoppableRun): AbortSignal {
  return StoppableRun.stopOf(this).signal
}

/** A run on a {@link RunStop}: a class, so the stack tells it from a plain run with an `instanceof`, not a lookup. */
class StoppableRun {
  readonly #stop: RunStop
  declare readonly signal: AbortSignal
  turn: number

  constructor(
    readonly id: string,
    turn: number,
    readonly state: Record<string, Json>,
    readonly budget: StepBudget,
    stop: RunStop,
  ) {
    this.turn = turn
    this.#stop = stop
    // An own, enumerable accessor, so a layer's `{ ...ctx.run }` keeps the signal, as it does a plain run's.
    ;(this as unknown as { __defineGetter__(key: string, getter: () => unknown): void }).__defineGetter__('signal', runSignal)
  }

  static stopOf(run: StoppableRun): RunStop {
    return run.#stop
  }
}

/**
 * A run whose `signal` is `stop`'s, made real only when something reads it: the agent's run when
 * its caller gave a signal. The stack and the model call follow `stop` itself ({@link runSource}).
 */
export function createRunOn(options: Omit<CreateRunOptions, 'signal'>, stop: RunStop): MutableRun {
  return new StoppableRun(
    options.id ?? newRunId(),
    options.turn ?? 0,
    options.state ?? {},
    new StepBudget(options.maxSteps, options.stepsUsed),
    stop,
  )
}

/** What a run's calls follow: its deferred stop when it has one, else its signal. */
export function runSource(run: RunContext): AbortSource {
  return run instanceof StoppableRun ? StoppableRun.stopOf(run) : run.signal
}
