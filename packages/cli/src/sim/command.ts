import { writeFile } from 'node:fs/promises'
import { createStack, type ToolEffect } from '@shallot/core'
import type { FaultKind } from '@shallot/testing'
import { defaultMiddleware, errorClassifier, panicCatcher, timeout } from 'shallot'
import { UsageError } from '../usage.js'
import { HERD_BACKOFFS, herd } from './herd.js'
import { OUTAGE_SECONDS, type OutageResult, outage } from './outage.js'
import { plotSvg, type Series } from './plot.js'
import type { Progress } from './progress.js'
import { type SimOptions, type SimResult, type StackEnv, simulate } from './simulate.js'

const FAULTS: Record<string, FaultKind> = {
  timeout: 'timeout',
  '429': 'rate_limit',
  '5xx': 'server_error',
  reset: 'connection_reset',
  refused: 'connection_refused',
}

/** A stack to simulate, by name. */
export interface NamedStack {
  label: string
  build: (env: StackEnv) => ReturnType<SimOptions['stack']>
  /** A write tool's service can be looked up, and the tool says how (`reconcile`). */
  reconcile?: boolean
}

/** The timeout every simulated stack uses, in virtual ms. */
const SIM_TIMEOUT_MS = 2_000

export const NO_RETRY: NamedStack = {
  label: 'no retry',
  build: (env) => createStack({ ...env, middleware: [panicCatcher(), errorClassifier(), timeout({ ms: SIM_TIMEOUT_MS })] }),
}

export const DEFAULT_STACK: NamedStack = {
  label: 'default stack',
  build: (env) => createStack({ ...env, middleware: defaultMiddleware({ timeout: { ms: SIM_TIMEOUT_MS } }) }),
}

/** The default stack with a write tool that can reconcile: an unknown outcome is looked up, not a dead end. */
export const RECONCILED_WRITE: NamedStack = { ...DEFAULT_STACK, label: 'reconciled', reconcile: true }

/** What `shallot sim` compares without `--config`: no retry, the default stack, and for a write tool the same stack with a reconciler. */
export function defaultStacks(effect: ToolEffect): NamedStack[] {
  return effect === 'write' ? [NO_RETRY, DEFAULT_STACK, RECONCILED_WRITE] : [NO_RETRY, DEFAULT_STACK]
}

export interface SimFlags {
  steps: number[]
  runs: number
  faultRate: number
  faults: FaultKind[]
  latencyMs: number
  effect: ToolEffect
  seed: number
  plot?: string
}

function number(name: string, text: string | undefined, fallback: number, check: (n: number) => boolean, allowed: string): number {
  if (text === undefined) return fallback
  const value = Number(text)
  if (text.trim() === '' || !Number.isFinite(value) || !check(value)) throw new UsageError(`--${name} must be ${allowed}, got "${text}"`)
  return value
}

/** Turns raw flag strings into checked simulation settings. */
export function parseSimFlags(values: Record<string, string | boolean | undefined>): SimFlags {
  const str = (key: string) => (typeof values[key] === 'string' ? (values[key] as string) : undefined)
  const steps = (str('steps') ?? '10,50,100,200')
    .split(',')
    .map((s) => number('steps', s, 0, (n) => Number.isInteger(n) && n > 0 && n <= 10_000, 'a comma list of whole numbers 1–10000'))
  const faults = (str('faults') ?? 'timeout,429,5xx,reset').split(',').map((name) => {
    const kind = FAULTS[name.trim()]
    if (kind === undefined) throw new UsageError(`--faults: unknown fault "${name}"; use ${Object.keys(FAULTS).join(', ')}`)
    return kind
  })
  const effect = str('effect') ?? 'read'
  if (effect !== 'read' && effect !== 'write' && effect !== 'idempotent')
    throw new UsageError(`--effect must be read, idempotent or write, got "${effect}"`)
  const flags: SimFlags = {
    steps,
    runs: number('runs', str('runs'), 10_000, (n) => Number.isInteger(n) && n > 0 && n <= 1_000_000, 'a whole number 1–1000000'),
    faultRate: number('fault-rate', str('fault-rate'), 0.01, (n) => n >= 0 && n <= 1, 'between 0 and 1'),
    faults,
    latencyMs: number('latency', str('latency'), 0, (n) => n >= 0 && n <= 60_000, 'between 0 and 60000'),
    effect,
    seed: number('seed', str('seed'), 1, Number.isInteger, 'a whole number'),
  }
  const plot = str('plot')
  if (plot !== undefined) flags.plot = plot
  return flags
}

const pct = (rate: number) => `${(rate * 100).toFixed(1)}%`

/** Runs the grid (stacks × step counts) and prints one table per stack, plus the p^n column. */
export async function runSim(
  flags: SimFlags,
  stacks: readonly NamedStack[],
  print: (line: string) => void,
  progress: Progress = () => () => {},
): Promise<Map<string, SimResult[]>> {
  print(
    `shallot sim: ${flags.runs} runs per cell, fault rate ${flags.faultRate} per attempt (${flags.faults.join(', ')}), ${flags.effect} tool, seed ${flags.seed}`,
  )
  const results = new Map<string, SimResult[]>()
  const cells = stacks.length * flags.steps.length
  let cell = 0
  for (const stack of stacks) {
    const rows: SimResult[] = []
    for (const steps of flags.steps) {
      rows.push(
        await simulate({
          steps,
          runs: flags.runs,
          faultRate: flags.faultRate,
          faults: flags.faults,
          latencyMs: flags.latencyMs,
          effect: flags.effect,
          seed: flags.seed,
          stack: stack.build,
          ...(stack.reconcile === true ? { reconcile: true } : {}),
          onProgress: progress({ label: `${stack.label}, ${steps} steps`, cell: ++cell, cells, runs: flags.runs }),
        }),
      )
    }
    results.set(stack.label, rows)
  }
  const header = ['steps', `(1-p)^n`, ...stacks.map((s) => s.label)]
  print('')
  print(`end-to-end success rate`)
  print(`  ${header.map((h) => h.padStart(15)).join('')}`)
  flags.steps.forEach((steps, i) => {
    const cells = [
      String(steps),
      pct((1 - flags.faultRate) ** steps),
      ...stacks.map((s) => pct(results.get(s.label)?.[i]?.successRate ?? 0)),
    ]
    print(`  ${cells.map((c) => c.padStart(15)).join('')}`)
  })
  for (const stack of stacks) {
    print('')
    print(`${stack.label}`)
    const headers = ['steps', 'success', 'attempts/step', 'p50 ms', 'p95 ms', 'retries', 'breaker trips', 'write retries refused']
    print(`  ${headers.map((h) => h.padStart(h.length + 3)).join('')}`)
    for (const r of results.get(stack.label) ?? []) {
      const cells = [
        r.steps,
        pct(r.successRate),
        r.attemptsPerStep.toFixed(3),
        r.p50Ms.toFixed(0),
        r.p95Ms.toFixed(0),
        r.retries,
        r.breakerTrips,
        r.writeRetriesRefused,
      ]
      print(`  ${cells.map((c, k) => String(c).padStart((headers[k] as string).length + 3)).join('')}`)
    }
  }
  if (flags.effect === 'write') printUnknownOutcomes(print, stacks, results)
  if (flags.plot !== undefined) {
    const series: Series[] = [
      { label: '(1-p)^n', dashed: true, points: flags.steps.map((steps) => ({ steps, successRate: (1 - flags.faultRate) ** steps })) },
      ...stacks.map((s) => ({
        label: s.label,
        points: (results.get(s.label) ?? []).map((r) => ({ steps: r.steps, successRate: r.successRate })),
      })),
    ]
    await writeFile(flags.plot, plotSvg(`success rate at ${flags.faultRate} faults per attempt`, series))
    print('')
    print(`chart written to ${flags.plot}`)
  }
  return results
}

/** For a write tool: how many writes were left unknown, and what reconciling them found (against what had landed). */
function printUnknownOutcomes(print: (line: string) => void, stacks: readonly NamedStack[], results: Map<string, SimResult[]>): void {
  print('')
  print('unknown write outcomes (a write failed after its request may have reached the service)')
  const headers = ['stack', 'steps', 'landed anyway', 'unknown', 'found landed', 'found not landed', 'left unknown']
  const width = Math.max(...stacks.map((s) => s.label.length), headers[0]?.length ?? 0)
  print(
    `  ${'stack'.padEnd(width)}${headers
      .slice(1)
      .map((h) => h.padStart(h.length + 3))
      .join('')}`,
  )
  for (const stack of stacks) {
    const rows = results.get(stack.label) ?? []
    // A stack that records no outcome (no idempotency layer) has nothing to say here.
    if (stack.reconcile !== true && rows.every((r) => r.unknownOutcomes === 0)) continue
    for (const r of rows) {
      const left = r.unknownOutcomes - r.reconciledApplied - r.reconciledNotApplied
      const cells = [
        r.steps,
        stack.reconcile === true ? r.landedFaults : '-',
        r.unknownOutcomes,
        r.reconciledApplied,
        r.reconciledNotApplied,
        left,
      ]
      print(`  ${stack.label.padEnd(width)}${cells.map((c, k) => String(c).padStart((headers[k + 1] as string).length + 3)).join('')}`)
    }
  }
}

/** `shallot sim herd`: each backoff against the same contended resource. */
export async function runHerd(values: Record<string, string | boolean | undefined>, print: (line: string) => void): Promise<void> {
  const clients = number(
    'clients',
    typeof values.clients === 'string' ? values.clients : undefined,
    100,
    (n) => Number.isInteger(n) && n > 0 && n <= 10_000,
    'a whole number 1–10000',
  )
  const seed = number('seed', typeof values.seed === 'string' ? values.seed : undefined, 1, Number.isInteger, 'a whole number')
  print(`shallot sim herd: ${clients} clients, one write each, one winner per 10 ms slot, base 10 ms, cap 10 s`)
  print(`  ${['backoff', 'total calls', 'completion (virtual)'].map((h) => h.padStart(22)).join('')}`)
  for (const backoff of HERD_BACKOFFS) {
    const result = await herd(backoff, { clients, baseMs: 10, capMs: 10_000, slotMs: 10, seed })
    print(`  ${[backoff, String(result.calls), `${(result.completionMs / 1000).toFixed(2)} s`].map((c) => c.padStart(22)).join('')}`)
  }
}

/**
 * `shallot sim outage`: model calls arriving at a random moment of a provider outage of each length, through the
 * default model stack with attempt-bounded retry (3 attempts) and with time-bounded retry (its two-minute budget).
 */
export async function runOutage(
  values: Record<string, string | boolean | undefined>,
  print: (line: string) => void,
): Promise<OutageResult[]> {
  const runs = number(
    'runs',
    typeof values.runs === 'string' ? values.runs : undefined,
    500,
    (n) => Number.isInteger(n) && n > 0 && n <= 100_000,
    'a whole number 1–100000',
  )
  const seed = number('seed', typeof values.seed === 'string' ? values.seed : undefined, 1, Number.isInteger, 'a whole number')
  print(
    `shallot sim outage: ${runs} model calls per cell, each arriving at a random moment of a provider outage (503s, no Retry-After), seed ${seed}`,
  )
  print(`  ${'outage'.padStart(8)}${'3 attempts'.padStart(36)}${'2-minute budget'.padStart(36)}`)
  const heads = ['success', 'requests', 'p95 time'].map((h) => h.padStart(12)).join('')
  print(`  ${''.padStart(8)}${heads}${heads}`)
  const results: OutageResult[] = []
  for (const seconds of OUTAGE_SECONDS) {
    const row = [
      await outage({ outageMs: seconds * 1000, runs, retry: 'attempts', seed }),
      await outage({ outageMs: seconds * 1000, runs, retry: 'time', seed }),
    ]
    results.push(...row)
    const cells = row.flatMap((r) => [pct(r.successRate), r.requestsPerCall.toFixed(1), `${(r.p95Ms / 1000).toFixed(1)} s`])
    print(`  ${`${seconds} s`.padStart(8)}${cells.map((c) => c.padStart(12)).join('')}`)
  }
  return results
}
