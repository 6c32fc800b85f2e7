import { defaultMiddleware } from 'shallot'
import { readTool, stackOf } from './fixtures.js'

const gc = (globalThis as { gc?: () => void }).gc

function collect(): number {
  if (gc === undefined) throw new Error('run the benchmarks with node --expose-gc (pnpm bench does)')
  gc()
  gc()
  return process.memoryUsage().heapUsed
}

/** 6: heap retained after `calls` calls with distinct arguments through the full stack. */
export async function heapRetained(calls = 1_000_000): Promise<{ calls: number; retainedMB: number }> {
  const stack = stackOf(defaultMiddleware(), [readTool])
  const before = collect()
  for (let i = 0; i < calls; i++) await stack.dispatch({ id: `c${i}`, name: 'lookup', args: { id: i } })
  const after = collect()
  return { calls, retainedMB: (after - before) / 1024 / 1024 }
}

/** 7: calls per second through the full stack, second by second, for `seconds`. */
export async function sustained(seconds = 10): Promise<{ perSecond: number[]; firstToLast: number }> {
  const stack = stackOf(defaultMiddleware(), [readTool])
  const perSecond: number[] = []
  let i = 0
  for (let s = 0; s < seconds; s++) {
    const end = performance.now() + 1000
    let count = 0
    while (performance.now() < end) {
      for (let k = 0; k < 256; k++) await stack.dispatch({ id: `c${i}`, name: 'lookup', args: { id: i++ } })
      count += 256
    }
    perSecond.push(count)
  }
  const first = perSecond[0] ?? 1
  const last = perSecond[perSecond.length - 1] ?? 0
  return { perSecond, firstToLast: last / first }
}
