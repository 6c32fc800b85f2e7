import {
  type AnyTool,
  type Clock,
  createRun,
  defineTool,
  type Stack,
  type ToolCall,
  type ToolEffect,
  type ToolResult,
  type TraceEvent,
} from '@shallot/core'
import { chaosTool, type FaultKind, type ManualClock, manualClock, seededRandom } from '@shallot/testing'
import { z } from 'zod'
import { reconcilingTool } from './reconciling-tool.js'

/** What a simulated run hands the stack factory: its one chaos tool, its virtual clock, its seeded random. */
export interface StackEnv {
  tools: AnyTool[]
  clock: Clock
  random: () => number
}

export interface SimOptions {
  /** Tool calls per run; a run succeeds only if every step ends ok (the p^n model: no model-level recovery). */
  steps: number
  runs: number
  /** Probability that one tool attempt fails. */
  faultRate: number
  faults: readonly FaultKind[]
  /** Virtual latency of each tool attempt, in ms. */
  latencyMs: number
  effect: ToolEffect
  seed: number
  /** Builds a fresh stack for one run (breakers and budgets do not leak between runs). */
  stack: (env: StackEnv) => Stack
  /** The write tool's service can be looked up: the tool carries that lookup as `reconcile`. */
  reconcile?: boolean
  /** Runs simulated at once (each on its own virtual clock). */
  concurrency?: number
  onProgress?: (done: number, total: number) => void
}

export interface SimResult {
  runs: number
  steps: number
  succeeded: number
  successRate: number
  /** Tool attempts per step, over all steps that ran. */
  attemptsPerStep: number
  p50Ms: number
  p95Ms: number
  breakerTrips: number
  retries: number
  writeRetriesRefused: number
  /** Writes whose failure left it unknown whether they took effect (reconciled or not). */
  unknownOutcomes: number
  /** Of those, the ones a reconciliation found had taken effect (the call completed with the result)… */
  reconciledApplied: number
  /** …and had not (the key released, a repeat safe). */
  reconciledNotApplied: number
  /** Faulted attempts that had in fact landed: the truth the reconciliations are measured against. */
  landedFaults: number
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] as number
}

/** One worker as the event loop sees it: the clock of its current run, and whether a call of that run is in flight. */
interface Lane {
  clock: ManualClock | undefined
  calling: boolean
  /** A `runAll()` of this lane's clock is under way. */
  moving: boolean
}

/**
 * Moves virtual time for the calls of one `simulate()` that cannot settle otherwise. A call still in
 * flight once the microtask queue is empty waits on its run's clock (a call that can settle by itself
 * does so within a dozen microtasks, and its worker's resumption keeps the queue busy until then), so
 * one `setImmediate` for all workers, armed while a call is in flight, runs each such clock. Nothing
 * per call but two flags: a counted spin of microtasks per call cost more than the stack's fastest layers.
 */
class Stalls {
  readonly #lanes: Lane[] = []
  #armed = false
  #fail: (err: unknown) => void = () => {}
  /** Rejects with the first error a clock throws (a run that sleeps in a loop). */
  readonly failed = new Promise<never>((_, reject) => {
    this.#fail = reject
  })

  constructor() {
    // Observed by `simulate()` only while it runs; a clock that throws after it gave up must not be an unhandled rejection.
    this.failed.catch(() => {})
  }

  lane(): Lane {
    const lane: Lane = { clock: undefined, calling: false, moving: false }
    this.#lanes.push(lane)
    return lane
  }

  arm(): void {
    if (this.#armed) return
    this.#armed = true
    setImmediate(this.#turn)
  }

  readonly #turn = () => {
    this.#armed = false
    for (const lane of this.#lanes) {
      if (!lane.calling || lane.moving || lane.clock === undefined) continue
      lane.moving = true
      lane.clock.runAll().then(() => {
        lane.moving = false
        this.arm()
      }, this.#fail)
    }
  }
}

const input = z.object({ step: z.number().int() })

/** What one run counts, read off each result's trace instead of a `stack.on()` listener: a listener makes the stack build two events per call and copy every other one. */
interface Counts {
  trips: number
  retries: number
  writeRefused: number
  unknown: number
  applied: number
  notApplied: number
}

function count(counts: Counts, trace: readonly TraceEvent[]): void {
  for (const event of trace) {
    if (event.type === 'circuit-breaker.state' && event.to === 'open') counts.trips++
    else if (event.type === 'retry.scheduled') counts.retries++
    else if (event.type === 'retry.stopped' && event.reason === 'unsafe_write') counts.writeRefused++
    else if (event.type === 'idempotency.outcome_unknown') counts.unknown++
    else if (event.type === 'idempotency.reconciled' && event.outcome === 'applied') counts.applied++
    else if (event.type === 'idempotency.reconciled' && event.outcome === 'not_applied') counts.notApplied++
  }
}

/** What every simulated run of one `simulate()` shares: its options, the tool every run wraps, the calls and the stall watch. */
interface Simulation {
  readonly options: SimOptions
  readonly base: AnyTool
  readonly calls: readonly ToolCall[]
  readonly stalls: Stalls
}

/** The `index`-th simulated run, on a virtual clock of its own that `lane` shows the stall watch. */
async function simulateRun({ options, base, calls, stalls }: Simulation, lane: Lane, index: number) {
  const clock = manualClock()
  lane.clock = clock
  const tool = chaosTool(base, {
    seed: options.seed * 100_003 + index,
    failRate: options.faultRate,
    errors: options.faults,
    clock,
    ...(options.latencyMs > 0 ? { latencyMs: options.latencyMs } : {}),
    // Nobody sees a simulated fault's stack, and capturing one costs as much as a dozen simulated calls.
    stackTraces: false,
  })
  const reconciling = options.reconcile
    ? reconcilingTool(tool, { clock, random: seededRandom(options.seed * 104_729 + index), latencyMs: options.latencyMs })
    : undefined
  const stack = options.stack({ tools: [reconciling?.tool ?? tool], clock, random: seededRandom(options.seed * 7_919 + index) })
  const counts: Counts = { trips: 0, retries: 0, writeRefused: 0, unknown: 0, applied: 0, notApplied: 0 }
  // One options object per run, not per call: the stack only reads it.
  const dispatchOptions = { run: createRun() }
  let ok = true
  let stepsRun = 0
  for (let step = 0; step < options.steps && ok; step++) {
    lane.calling = true
    stalls.arm()
    let result: ToolResult
    try {
      result = await stack.dispatch(calls[step] as ToolCall, dispatchOptions)
    } finally {
      lane.calling = false
    }
    count(counts, result.trace)
    stepsRun++
    ok = result.ok
  }
  const landedFaults = reconciling?.ledger.landedFaults ?? 0
  return { ok, stepsRun, attempts: tool.stats.calls, durationMs: clock.now(), landedFaults, ...counts }
}

/**
 * Runs many simulated agent runs against a stack on virtual time with injected faults, and
 * measures what reaches the end.
 *
 * @example
 * const result = await simulate({ steps: 100, runs: 10_000, faultRate: 0.01, faults: ['server_error'], latencyMs: 0,
 *   effect: 'read', seed: 1, stack: (env) => createStack({ ...env, middleware: defaultMiddleware() }) })
 */
export async function simulate(options: SimOptions): Promise<SimResult> {
  const concurrency = options.concurrency ?? 32
  const durations: number[] = []
  let succeeded = 0
  let attempts = 0
  let stepsRun = 0
  let breakerTrips = 0
  let retries = 0
  let writeRetriesRefused = 0
  const outcomes = { unknown: 0, applied: 0, notApplied: 0, landedFaults: 0 }
  let next = 0
  let done = 0
  // One tool definition for every run: each run wraps it in its own chaos tool, whose state is per run.
  const base = defineTool({ name: 'step', description: 'One step of the task', input, effect: options.effect, execute: ({ step }) => step })
  const stalls = new Stalls()
  // One call object per step for every run: the stack reads a call and never changes it.
  const calls: ToolCall[] = Array.from({ length: options.steps }, (_, step) => ({ id: `s${step}`, name: 'step', args: { step } }))
  const simulation: Simulation = { options, base, calls, stalls }
  const worker = async () => {
    const lane = stalls.lane()
    while (next < options.runs) {
      const index = next++
      const run = await simulateRun(simulation, lane, index)
      if (run.ok) succeeded++
      attempts += run.attempts
      stepsRun += run.stepsRun
      breakerTrips += run.trips
      retries += run.retries
      writeRetriesRefused += run.writeRefused
      // A reconciled write was unknown until it was asked about; one that stayed unknown is counted by its record.
      outcomes.unknown += run.unknown + run.applied + run.notApplied
      outcomes.applied += run.applied
      outcomes.notApplied += run.notApplied
      outcomes.landedFaults += run.landedFaults
      durations.push(run.durationMs)
      done++
      options.onProgress?.(done, options.runs)
    }
  }
  await Promise.race([Promise.all(Array.from({ length: Math.min(concurrency, options.runs) }, worker)), stalls.failed])
  durations.sort((a, b) => a - b)
  return {
    runs: options.runs,
    steps: options.steps,
    succeeded,
    successRate: options.runs === 0 ? 0 : succeeded / options.runs,
    attemptsPerStep: stepsRun === 0 ? 0 : attempts / stepsRun,
    p50Ms: percentile(durations, 0.5),
    p95Ms: percentile(durations, 0.95),
    breakerTrips,
    retries,
    writeRetriesRefused,
    unknownOutcomes: outcomes.unknown,
    reconciledApplied: outcomes.applied,
    reconciledNotApplied: outcomes.notApplied,
    landedFaults: outcomes.landedFaults,
  }
}
