import { measure } from 'mitata'

/** One measured function: its median and mean cost per call in nanoseconds. */
export interface Row {
  name: string
  p50ns: number
  avgns: number
}

/** Measures an async or sync function with mitata and keeps the figures that go in the tables. */
export async function time(name: string, fn: () => unknown): Promise<Row> {
  const stats = await measure(fn, { min_cpu_time: 400 * 1e6 })
  return { name, p50ns: stats.p50, avgns: stats.avg }
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
    console.log(`  ${row.name.padEnd(width)}  ${formatNs(row.p50ns).padStart(10)}  ${ratio}`)
  }
}
