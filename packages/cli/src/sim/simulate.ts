import { type AnyTool, type Clock, createRun, defineTool, type Stack, type ToolEffect, type TraceEvent } from '@shallot/core'
import { chaosTool, type FaultKind, type ManualClock, manualClock, seededRandom } from '@shallot/testing'
import { z } from 'zod'

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
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] as number
}

/**
 * The calls of one `simulate()` that may be waiting on their virtual clock. A call that is still
 * pending once the microtask queue is empty cannot settle without virtual time moving, so one
 * `setImmediate` for all of them, armed while any call is pending, moves each such call's clock;
 * the queue drains only when every run is waiting. A counted spin of microtasks per call (the
 * obvious way) costs more than the stack's own fastest layers.
 */
class Stalls {
  #waiting = new Set<() => void>()
  #armed = false
  readonly #turn = () => {
    this.#armed = false
    const due = [...this.#waiting]
    this.#waiting.clear()
    for (const wake of due) wake()
  }

  park(wake: () => void): void {
    this.#waiting.add(wake)
    if (!this.#armed) {
      this.#armed = true
      setImmediate(this.#turn)
    }
  }

  unpark(wake: () => void): void {
    this.#waiting.delete(wake)
  }
}

/** Waits for `pending`, moving its run's virtual time whenever nothing else can settle it. */
function settle<T>(clock: ManualClock, pending: Promise<T>, stalls: Stalls): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let settled = false
    const wake = () => {
      clock.runAll().then(() => {
        if (!settled) stalls.park(wake)
      }, reject)
    }
    pending.then(
      (value) => {
        settled = true
        stalls.unpark(wake)
        resolve(value)
      },
      (err: unknown) => {
        settled = true
        stalls.unpark(wake)
        reject(err)
      },
    )
    stalls.park(wake)
  })
}

const input = z.object({ step: z.number().int() })

/** What one run counts, read off each result's trace instead of a `stack.on()` listener: a listener makes the stack build two events per call and copy every other one. */
interface Counts {
  trips: number
  retries: number
  writeRefused: number
}

function count(counts: Counts, trace: readonly TraceEvent[]): void {
  for (const event of trace) {
    if (event.type === 'circuit-breaker.state' && event.to === 'open') counts.trips++
    else if (event.type === 'retry.scheduled') counts.retries++
    else if (event.type === 'retry.stopped' && event.reason === 'unsafe_write') counts.writeRefused++
  }
}

async function simulateRun(options: SimOptions, base: AnyTool, ids: readonly string[], stalls: Stalls, index: number) {
  const clock = manualClock()
  const tool = chaosTool(base, {
    seed: options.seed * 100_003 + index,
    failRate: options.faultRate,
    errors: options.faults,
    clock,
    ...(options.latencyMs > 0 ? { latencyMs: options.latencyMs } : {}),
  })
  const stack = options.stack({ tools: [tool], clock, random: seededRandom(options.seed * 7_919 + index) })
  const counts: Counts = { trips: 0, retries: 0, writeRefused: 0 }
  const run = createRun()
  let ok = true
  let stepsRun = 0
  for (let step = 0; step < options.steps && ok; step++) {
    const result = await settle(clock, stack.dispatch({ id: ids[step] as string, name: 'step', args: { step } }, { run }), stalls)
    count(counts, result.trace)
    stepsRun++
    ok = result.ok
  }
  return { ok, stepsRun, attempts: tool.stats.calls, durationMs: clock.now(), ...counts }
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
  let next = 0
  let done = 0
  // One tool definition for every run: each run wraps it in its own chaos tool, whose state is per run.
  const base = defineTool({ name: 'step', description: 'One step of the task', input, effect: options.effect, execute: ({ step }) => step })
  const stalls = new Stalls()
  const ids = Array.from({ length: options.steps }, (_, step) => `s${step}`)
  const worker = async () => {
    while (next < options.runs) {
      const index = next++
      const run = await simulateRun(options, base, ids, stalls, index)
      if (run.ok) succeeded++
      attempts += run.attempts
      stepsRun += run.stepsRun
      breakerTrips += run.trips
      retries += run.retries
      writeRetriesRefused += run.writeRefused
      durations.push(run.durationMs)
      done++
      options.onProgress?.(done, options.runs)
    }
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, options.runs) }, worker))
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
  }
}
