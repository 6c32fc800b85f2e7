// `pnpm chaos [--quick] [--no-plant] [--seed=N] [--runs=N] [--workers=N] [--faults=N] [--json=path] [--history=path] [--replay=path]`:
// one seeded soak, its checker's verdict and the report. Exits 1 when the checker finds an anomaly
// outside the planted runs or misses a planted one; it then writes the history file, which
// `--replay=<file>` runs again (same seed, same schedule).
import { writeFileSync } from 'node:fs'
import { plantOf } from './agents.js'
import { type AnomalyKind, checkHistory, percentile } from './checker.js'
import { replayShape, writeHistoryFile } from './history-file.js'
import type { Plant, SoakShape } from './schedule.js'
import { runSoak } from './soak.js'

function flag(name: string): string | undefined {
  const arg = process.argv.slice(2).find((a) => a === `--${name}` || a.startsWith(`--${name}=`))
  return arg === undefined ? undefined : (arg.split('=')[1] ?? '')
}

function count(name: string, fallback: number): number {
  const text = flag(name)
  if (text === undefined) return fallback
  const value = Number(text)
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} must be a positive integer, got "${text}"`)
  return value
}

/** What the checker must name for each planted misbehaviour. */
const CAUGHT_AS: Record<Plant, readonly AnomalyKind[]> = {
  key_on_resume: ['duplicate_write', 'key_changed'],
  own_key: ['duplicate_write', 'key_changed', 'foreign_key'],
  forgetful_store: ['duplicate_by_key', 'duplicate_write'],
  ignore_claim: ['overlapping_drivers'],
}

const quick = flag('quick') !== undefined
const replay = flag('replay')
const seed = count('seed', 1)
const workers = count('workers', 3)
const shape: SoakShape =
  replay !== undefined
    ? replayShape(replay)
    : {
        seed,
        workers,
        lockMs: 4000,
        plant: flag('no-plant') === undefined,
        ...(quick ? { runs: count('runs', 240), spanMs: 18_000 } : { runs: count('runs', 2400), spanMs: 100_000 }),
        faults: flag('faults') === '0' ? 0 : count('faults', quick ? 16 : 20),
      }

const result = await runSoak({ ...shape, boundMs: 90_000, concurrency: 48, log: (line) => console.error(line) })
const verdict = checkHistory(result.history)
const plans = result.history.plans
const planted = plans.filter((p) => plantOf(p.runId) !== undefined)
const plants = planted.map((p) => {
  const plant = plantOf(p.runId) as Plant
  const named = new Set(verdict.anomalies.filter((a) => a.runId === p.runId).map((a) => a.kind))
  return { runId: p.runId, plant, named: [...named], caught: CAUGHT_AS[plant].every((kind) => named.has(kind)) }
})
const anomalies = verdict.anomalies.filter((a) => plantOf(a.runId) === undefined)
const byKind: Partial<Record<AnomalyKind, number>> = {}
for (const a of anomalies) byKind[a.kind] = (byKind[a.kind] ?? 0) + 1
const unplanted = (kind: AnomalyKind) => byKind[kind] ?? 0
const injected = {
  ...result.faults,
  model_429: plans.filter((p) => p.model429).length,
  tool_429_parks: plans.filter((p) => p.parks).length,
  hanging_tool: plans.filter((p) => p.hangTool).length,
  hanging_model: plans.filter((p) => p.hangModel).length,
  duplicate_enqueue: plans.filter((p) => p.duplicate !== undefined).length,
  skewed_clocks: result.schedule.skews.filter((s) => s !== 0).length,
}
const landed = verdict.unknowns.filter((u) => u.landed).length
const p95 = percentile(verdict.terminalMs, 95)
const failed = anomalies.length > 0 || plants.some((p) => !p.caught)
const historyPath = flag('history') ?? `chaos-history-s${shape.seed}.json`
const report = {
  seed: shape.seed,
  mode: quick ? 'quick' : replay !== undefined ? 'replay' : 'full',
  runs: shape.runs,
  workers: shape.workers,
  /** The rate the runs were enqueued at over the window (what the fleet had to absorb, every run within the bound). */
  offeredRunsPerSecond: Number(((shape.runs / shape.spanMs) * 1000).toFixed(1)),
  /** Runs over the soak's whole wall time: servers' start, the window, the drain, the checker. */
  runsPerSecond: Number(((shape.runs / result.wallMs) * 1000).toFixed(1)),
  faults: injected,
  finals: verdict.finals,
  duplicates: { byKey: unplanted('duplicate_by_key'), byWrite: unplanted('duplicate_write') },
  overlappingDrivers: unplanted('overlapping_drivers'),
  lost: unplanted('lost_run'),
  anomaliesByKind: byKind,
  planted: plants,
  failovers: result.failovers.map((f) => ({ lostWalBytes: f.lostWalBytes, lostActs: f.lostActs, lostWrites: f.lostWrites.length })),
  writesReportedDoneThenLostByFailover: verdict.forgotten,
  unknownOutcomes: { total: verdict.unknowns.length, landed, notLanded: verdict.unknowns.length - landed },
  stalledJobs: result.stalled,
  workerCrashes: result.crashes,
  forcedStops: result.forcedStops,
  repeatedModelTurns: result.repeatedModelTurns,
  p95TerminalMs: p95,
  maxTerminalMs: verdict.terminalMs.at(-1) ?? Number.NaN,
  wallMs: result.wallMs,
  anomalies: anomalies.map((a) => `${a.kind} ${a.runId}: ${a.detail}`),
}
const jsonPath = flag('json')
if (jsonPath) writeFileSync(jsonPath, `${JSON.stringify(report, null, 2)}\n`)
if (failed || flag('history') !== undefined) {
  writeHistoryFile(historyPath, {
    shape,
    schedule: result.schedule,
    anomalies: verdict.anomalies,
    history: result.history,
    timelines: result.timelines,
  })
}
const list = (record: Readonly<Record<string, number | undefined>>) =>
  Object.entries(record)
    .map(([k, n]) => `${k} ${n}`)
    .join(', ')
console.log(
  [
    `chaos soak, seed ${shape.seed} (${report.mode}${shape.plant ? ', planted' : ''}): ${shape.runs} runs on ${shape.workers} worker processes, enqueued at ${report.offeredRunsPerSecond}/s over ${shape.spanMs / 1000} s; ${(result.wallMs / 1000).toFixed(0)} s end to end (${report.runsPerSecond} runs/s)`,
    `  faults: ${list(injected)}`,
    `  final states: ${list(verdict.finals)}`,
    `  duplicates by key ${report.duplicates.byKey}, by logical write ${report.duplicates.byWrite}; overlapping drivers ${report.overlappingDrivers}; lost runs ${report.lost}`,
    ...plants.map(
      (p) => `  planted ${p.plant} in ${p.runId}: ${p.caught ? 'caught' : 'MISSED'} (${p.named.join(', ') || 'nothing named'})`,
    ),
    ...result.failovers.map(
      (f, i) =>
        `  failover ${i + 1}: the promoted replica lost ${f.lostWalBytes} bytes of WAL: ${f.lostActs} of the world's requests and ${f.lostWrites.length} writes`,
    ),
    `  writes reported done by their runs, then rolled back by a failover: ${verdict.forgotten}`,
    `  stalled jobs seen ${result.stalled}, worker crashes replaced ${result.crashes}, graceful stops forced ${result.forcedStops}, model turns asked twice ${result.repeatedModelTurns}`,
    `  unknown outcomes ${verdict.unknowns.length}: ${landed} landed, ${verdict.unknowns.length - landed} did not (per the ledger)`,
    `  time to terminal: p95 ${p95} ms, max ${report.maxTerminalMs} ms`,
    failed
      ? `  checker: ${anomalies.length} anomalies (${list(byKind) || 'none'})${plants.some((p) => !p.caught) ? ', a planted anomaly missed' : ''}; history in ${historyPath}, replay with --replay=${historyPath}\n${report.anomalies.map((v) => `    ${v}`).join('\n')}`
      : `  checker: no anomaly${planted.length > 0 ? ' outside the planted runs, every planted one caught' : ''}`,
  ].join('\n'),
)
if (failed) process.exitCode = 1
