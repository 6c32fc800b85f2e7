import { measure } from 'mitata'

/** One measured function: its median cost per call in nanoseconds, over interleaved rounds. */
export interface Row {
  name: string
  /** Median over the rounds of each round's mitata median. */
  p50ns: number
  avgns: number
  /** The fastest and slowest round's median: how much the shared machine moved the row. */
  minns: number
  maxns: number
}

/** A function to measure, by name. */
export interface Case {
  readonly name: string
  readonly fn: () => unknown
}

/**
 * mitata forces a full collection before every measurement. That shrinks V8's young generation, and
 * the next tenth of a second runs with several times the scavenges: a 60 ms measurement of the read
 * stack gave 8 µs right after one and 3.5 µs without it. A long-lived agent process never forces a
 * collection, so neither does the bench; each case's garbage is collected as the process goes.
 */
const NO_FORCED_GC = false as const

const median = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN
}

/**
 * Measures every case, after one unmeasured warm-up round, in `rounds` interleaved rounds (case 1, 2, …, n, then again, the order
 * rotated each round) and keeps each case's median round. On a shared machine load comes in waves;
 * measuring the rows of one table one after the other would give each its own wave, so ratios
 * between rows would measure the load, not the code.
 */
export async function interleave(cases: readonly Case[], rounds = 5, cpuMsPerRound = 120): Promise<Row[]> {
  const samples = cases.map(() => ({ p50: [] as number[], avg: [] as number[] }))
  // mitata warms a function up with three calls. The optimizing compiler needs thousands, and a
  // case's first round would measure its warm-up instead of the code, so every case runs one
  // unmeasured round first: the figures are steady-state costs, as in a long-lived agent process.
  const options = { min_cpu_time: cpuMsPerRound * 1e6, gc: NO_FORCED_GC }
  for (const item of cases) await measure(item.fn, options)
  for (let round = 0; round < rounds; round++) {
    for (let k = 0; k < cases.length; k++) {
      const index = (k + round) % cases.length
      const item = cases[index] as Case
      const stats = await measure(item.fn, options)
      const sample = samples[index] as { p50: number[]; avg: number[] }
      sample.p50.push(stats.p50)
      sample.avg.push(stats.avg)
    }
  }
  return cases.map((item, i) => {
    const sample = samples[i] as { p50: number[]; avg: number[] }
    return {
      name: item.name,
      p50ns: median(sample.p50),
      avgns: median(sample.avg),
      minns: Math.min(...sample.p50),
      maxns: Math.max(...sample.p50),
    }
  })
}

/** The target rows: each case's median per call in every round, and ratios taken round by round. */
export interface Paired {
  rounds: number
  /** Per case name, its mitata median in each round (nanoseconds), in round order. */
  perRound: Record<string, number[]>
  /** The median over the rounds of `a`'s median. */
  median(a: string): number
  /** The median over the rounds of `a ÷ b` within the round, and the smallest and largest of them. */
  ratio(a: string, b: string): { median: number; min: number; max: number }
}

/**
 * Measures a few cases back to back, many short rounds, the order rotated, after a warm-up round.
 * A ratio is taken within each round, between rows measured a fraction of a second apart, and the
 * median of those is reported: load on a shared machine moves by the second, and a ratio of two
 * medians taken from rounds seconds apart would carry that movement into the figure.
 */
export async function paired(cases: readonly Case[], rounds = 15, cpuMsPerRound = 60): Promise<Paired> {
  const options = { min_cpu_time: cpuMsPerRound * 1e6, batch_samples: 1024, gc: NO_FORCED_GC }
  for (const item of cases) await measure(item.fn, options)
  const perRound: Record<string, number[]> = Object.fromEntries(cases.map((c) => [c.name, [] as number[]]))
  for (let round = 0; round < rounds; round++) {
    for (let k = 0; k < cases.length; k++) {
      const item = cases[(k + round) % cases.length] as Case
      const stats = await measure(item.fn, options)
      perRound[item.name]?.push(stats.p50)
    }
  }
  const of = (name: string) => {
    const values = perRound[name]
    if (values === undefined) throw new Error(`no paired row named ${name}`)
    return values
  }
  return {
    rounds,
    perRound,
    median: (a) => median(of(a)),
    ratio(a, b) {
      const bs = of(b)
      const ratios = of(a).map((v, i) => v / (bs[i] as number))
      return { median: median(ratios), min: Math.min(...ratios), max: Math.max(...ratios) }
    },
  }
}

/** Measures one function alone (tables whose rows do not compare with each other). */
export async function time(name: string, fn: () => unknown): Promise<Row> {
  const [row] = await interleave([{ name, fn }], 1, 400)
  return row as Row
}

/** Formats nanoseconds for people: 37 ns, 1.2 µs, 3.4 ms. */
export function formatNs(ns: number): string {
  if (ns < 1_000) return `${ns.toFixed(0)} ns`
  if (ns < 1_000_000) return `${(ns / 1_000).toFixed(2)} µs`
  return `${(ns / 1_000_000).toFixed(2)} ms`
}

/** Prints rows as a table with each row's ratio to the row named `baseline`. */
export function printTable(title: string, rows: readonly Row[], baseline: string): void {
  const base = rows.find((r) => r.name === baseline)
  console.log(`\n${title}`)
  const width = Math.max(...rows.map((r) => r.name.length))
  for (const row of rows) {
    const ratio = base ? `${(row.p50ns / base.p50ns).toFixed(2)}× ${baseline}` : ''
    const spread = `[${formatNs(row.minns)} – ${formatNs(row.maxns)}]`
    console.log(`  ${row.name.padEnd(width)}  ${formatNs(row.p50ns).padStart(10)}  ${spread.padEnd(24)} ${ratio}`)
  }
}
