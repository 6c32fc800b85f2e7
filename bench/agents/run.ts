/**
 * `pnpm bench:agents [--seed=1] [--episodes=20] [--matrix=3] [--contenders=a,b] [--faults=a,b] [--docs]`: the table on stdout, JSON
 * and an SVG chart under bench/agents/results; with `--docs`, the generated sections of
 * docs/benchmarks.md is rewritten from this run (the README summarises it by hand and links it).
 * `pnpm bench:agents trace <contender> <task> [--seed=1] [--episode=0] [--fault=mixed|<kind>]`
 * replays one episode and prints what happened, line by line.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { type BenchResult, runBench, scheduleOf } from './bench.js'
import { CONTENDERS, type Contender } from './contenders/index.js'
import { startEndpoint } from './endpoint.js'
import { runEpisode } from './episode.js'
import { ALL_FAULTS, type FaultKind } from './faults.js'
import { chart, FOCUS, focus, matrix, table } from './report.js'
import { TASKS } from './tasks.js'
import { installVirtualTime, uninstallVirtualTime } from './virtual-time.js'

const here = dirname(fileURLToPath(import.meta.url))
// Compiled to bench/agents/dist; the sources' folder is one up.
const agentsDir = here.endsWith('dist') ? dirname(here) : here
const repoDir = dirname(dirname(agentsDir))

function flag(args: readonly string[], name: string, fallback: string): string {
  const found = args.find((arg) => arg.startsWith(`--${name}=`))
  return found === undefined ? fallback : found.slice(name.length + 3)
}

/** `--contenders=a,b`: those contenders only, in the bench's order; empty: all of them. */
function contendersOf(list: string): readonly Contender[] {
  if (list === '') return CONTENDERS
  const ids = list.split(',')
  const unknown = ids.filter((id) => !CONTENDERS.some((c) => c.id === id))
  if (unknown.length > 0) throw new Error(`--contenders: unknown ${unknown.join(', ')}; use ${CONTENDERS.map((c) => c.id).join(', ')}`)
  return CONTENDERS.filter((c) => ids.includes(c.id))
}

/** `--faults=a,b`: the matrix's fault kinds; empty: all of them. */
function faultsOf(list: string): readonly FaultKind[] {
  if (list === '') return ALL_FAULTS
  const kinds = list.split(',')
  const unknown = kinds.filter((kind) => !ALL_FAULTS.includes(kind as FaultKind))
  if (unknown.length > 0) throw new Error(`--faults: unknown ${unknown.join(', ')}; use ${ALL_FAULTS.join(', ')}`)
  return kinds as FaultKind[]
}

function render(result: BenchResult): string {
  const contenders = result.mixed.map((s) => s.contender)
  const summary = table(result.mixed)
  const kinds = Object.keys(result.matrix)
  const faults =
    kinds.length === 0
      ? ''
      : matrix(kinds, contenders, (kind, contender) => result.matrix[kind]?.find((s) => s.contender === contender) as never)
  const focused = FOCUS.flatMap(({ kind, label }) => {
    const rows = result.matrix[kind]
    return rows === undefined ? [] : ['', focus(label, rows)]
  })
  const header = `Seed ${result.seed}; ${result.episodes} mixed-schedule episodes per task and contender; matrix: ${result.matrixEpisodes} per fault kind and task. Virtual time.`
  return [header, '', summary, '', faults, ...focused].join('\n')
}

function replaceSection(file: string, marker: string, body: string): void {
  const text = readFileSync(file, 'utf8')
  const start = `<!-- ${marker}:start -->`
  const end = `<!-- ${marker}:end -->`
  const from = text.indexOf(start)
  const to = text.indexOf(end)
  if (from < 0 || to < from) throw new Error(`${file} has no ${start} … ${end} section; add the two markers where the figures go`)
  writeFileSync(file, `${text.slice(0, from + start.length)}\n${body}\n${text.slice(to)}`)
}

async function bench(args: readonly string[]): Promise<void> {
  const seed = Number(flag(args, 'seed', '1'))
  const episodes = Number(flag(args, 'episodes', '20'))
  const matrixEpisodes = Number(flag(args, 'matrix', '3'))
  const contenders = contendersOf(flag(args, 'contenders', ''))
  const faults = faultsOf(flag(args, 'faults', ''))
  const started = performance.now()
  installVirtualTime()
  let result: BenchResult
  try {
    result = await runBench({
      seed,
      episodes,
      matrixEpisodes,
      contenders,
      faults,
      onProgress: (done, total) => {
        if (done % 200 === 0 || done === total) process.stderr.write(`  ${done}/${total} episodes\n`)
      },
    })
  } finally {
    uninstallVirtualTime()
  }
  const full = render(result)
  process.stdout.write(`${full}\n\n(${((performance.now() - started) / 1000).toFixed(1)} s real)\n`)
  const results = join(agentsDir, 'results')
  mkdirSync(results, { recursive: true })
  const { runs, ...figures } = result
  writeFileSync(join(results, `seed-${seed}.json`), `${JSON.stringify({ ...figures, runs }, null, 1)}\n`)
  const svg = chart(result.mixed, `Agent runs under the mixed fault schedule (seed ${seed}, ${result.mixed[0]?.runs ?? 0} runs each)`)
  writeFileSync(join(results, `seed-${seed}.svg`), svg)
  if (args.includes('--docs')) {
    replaceSection(join(repoDir, 'docs/benchmarks.md'), 'bench-agents', full)
  }
}

async function trace(args: readonly string[]): Promise<void> {
  const [contenderId, taskId] = args
  const contender = CONTENDERS.find((c) => c.id === contenderId)
  const task = TASKS.find((t) => t.id === taskId)
  if (contender === undefined || task === undefined) {
    throw new Error(`trace needs a contender (${CONTENDERS.map((c) => c.id).join(', ')}) and a task (${TASKS.map((t) => t.id).join(', ')})`)
  }
  const kind = flag(args, 'fault', 'mixed') as 'mixed' | FaultKind
  if (kind !== 'mixed' && !ALL_FAULTS.includes(kind)) throw new Error(`--fault must be mixed or one of ${ALL_FAULTS.join(', ')}`)
  const schedule = scheduleOf(kind, Number(flag(args, 'seed', '1')), task, Number(flag(args, 'episode', '0')))
  if (schedule === undefined) throw new Error(`the fault ${kind} does not apply to the task ${task.id}`)
  installVirtualTime()
  const endpoint = await startEndpoint()
  try {
    const result = await runEpisode(endpoint, contender, task, schedule)
    for (const line of result.trace) process.stdout.write(`${(line.at / 1000).toFixed(3).padStart(9)} s  ${line.text}\n`)
    process.stdout.write(
      `\n${result.status}; duplicates ${result.duplicates}; tool executions ${result.toolExecutions}; model requests ${result.modelRequests}\n`,
    )
  } finally {
    await endpoint.close()
    uninstallVirtualTime()
  }
}

const args = process.argv.slice(2)
await (args[0] === 'trace' ? trace(args.slice(1)) : bench(args))
