// `pnpm chaos [--quick] [--seed=N] [--runs=N] [--workers=N] [--json=path]`: one seeded soak, its
// checker's verdict and the report. Exits 1 when the checker finds a violation, naming the seed.
import { writeFileSync } from 'node:fs'
import { checkHistory, percentile } from './checker.js'
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

const quick = flag('quick') !== undefined
const seed = count('seed', 1)
const shape = quick
  ? { runs: count('runs', 60), workers: count('workers', 3), spanMs: 30_000, faults: 7 }
  : { runs: count('runs', 500), workers: count('workers', 3), spanMs: 150_000, faults: 30 }

const result = await runSoak({ seed, ...shape, lockMs: 2000, boundMs: 90_000, concurrency: 8, log: (line) => console.error(line) })
const verdict = checkHistory(result.history)
// The pushback faults are in the runs' plans: a model 429 and a tool 429, each with a Retry-After past the park threshold.
const injected = {
  ...result.faults,
  model_429: result.history.plans.filter((p) => p.model429).length,
  tool_429_parks: result.history.plans.filter((p) => p.parks).length,
}
const landed = verdict.unknowns.filter((u) => u.landed).length
const p95 = percentile(verdict.terminalMs, 95)
const report = {
  seed,
  mode: quick ? 'quick' : 'full',
  runs: shape.runs,
  workers: shape.workers,
  faults: injected,
  finals: verdict.finals,
  duplicates: verdict.duplicates,
  lost: verdict.lost.length,
  unknownOutcomes: { total: verdict.unknowns.length, landed, notLanded: verdict.unknowns.length - landed },
  stalledJobs: result.stalled,
  repeatedModelTurns: result.repeatedModelTurns,
  p95TerminalMs: p95,
  maxTerminalMs: verdict.terminalMs.at(-1) ?? Number.NaN,
  wallMs: result.wallMs,
  violations: verdict.violations,
}
const jsonPath = flag('json')
if (jsonPath) writeFileSync(jsonPath, `${JSON.stringify(report, null, 2)}\n`)
const faults = Object.entries(injected)
  .map(([kind, n]) => `${kind} ${n}`)
  .join(', ')
console.log(
  [
    `chaos soak, seed ${seed} (${report.mode}): ${shape.runs} runs on ${shape.workers} worker processes, ${(result.wallMs / 1000).toFixed(0)} s`,
    `  faults: ${faults}`,
    `  final states: ${Object.entries(verdict.finals)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ')}`,
    `  duplicates ${verdict.duplicates}, lost runs ${verdict.lost.length}, stalled jobs seen ${result.stalled}, model turns asked twice ${result.repeatedModelTurns}`,
    `  unknown outcomes ${verdict.unknowns.length}: ${landed} landed, ${verdict.unknowns.length - landed} did not (per the ledger)`,
    ...verdict.unknowns.map((u) => `    ${u.runId} ${u.tool}: ${u.landed ? 'landed' : 'not landed'}`),
    `  time to terminal: p95 ${p95} ms, max ${report.maxTerminalMs} ms`,
    verdict.violations.length === 0
      ? '  checker: no violation'
      : `  checker: ${verdict.violations.length} violations; replay with --seed=${seed}${quick ? ' --quick' : ''}\n${verdict.violations.map((v) => `    ${v}`).join('\n')}`,
  ].join('\n'),
)
if (verdict.violations.length > 0) process.exitCode = 1
