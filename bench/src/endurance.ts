import { createAgent } from '@shallot/agent'
import type { ModelAdapter } from '@shallot/core'
import { defaultMiddleware } from 'shallot'
import { distinctCall, readTool, stackOf, writeTool } from './fixtures.js'
import { koaSevenAsync } from './peers.js'

const gc = (globalThis as { gc?: () => void }).gc

function collect(): number {
  if (gc === undefined) throw new Error('run the benchmarks with node --expose-gc (pnpm bench does)')
  gc()
  gc()
  return process.memoryUsage().heapUsed
}

const toolFor = (kind: 'read' | 'write') => (kind === 'read' ? readTool : writeTool)

/** 6: heap retained after `calls` calls with distinct arguments through the full stack (a write stack keeps its idempotency records). */
export async function heapRetained(kind: 'read' | 'write', calls = 1_000_000): Promise<{ calls: number; retainedMB: number }> {
  const tool = toolFor(kind)
  const stack = stackOf(defaultMiddleware(), [tool])
  const before = collect()
  for (let i = 0; i < calls; i++) await stack.dispatch(distinctCall(tool.name))
  const after = collect()
  return { calls, retainedMB: (after - before) / 1024 / 1024 }
}

/**
 * 7: calls per second through the full stack, second by second, for `seconds`. Counted in CPU
 * seconds of this process, not wall seconds: on a machine shared with other work a wall second
 * measures the neighbours. After one uncounted second, each second is split into slices of 1,024 calls, alternately through the
 * stack and through koa-compose 7 (the reference), so `relative` (the stack's rate ÷ the
 * reference's in the same second) shows a slowdown of the stack's own, and not the machine's: a
 * host that slows down slows both. A leak that slows the whole process shows in scenario 6's heap.
 */
const SLICE = 1024

export async function sustained(
  kind: 'read' | 'write',
  seconds = 10,
): Promise<{ perSecond: number[]; firstToLast: number; relative: number[]; relativeFirstToLast: number }> {
  const tool = toolFor(kind)
  const stack = stackOf(defaultMiddleware(), [tool])
  const reference = koaSevenAsync()
  const perSecond: number[] = []
  const relative: number[] = []
  const cpuMs = () => {
    const used = process.cpuUsage()
    return (used.user + used.system) / 1000
  }
  // Second -1 warms both up and is not counted: the first counted second is the stack at speed.
  for (let s = -1; s < seconds; s++) {
    let stackMs = 0
    let referenceMs = 0
    let count = 0
    let referenceCount = 0
    while (stackMs + referenceMs < 1000) {
      let started = cpuMs()
      for (let k = 0; k < SLICE; k++) await stack.dispatch(distinctCall(tool.name))
      let ended = cpuMs()
      stackMs += ended - started
      count += SLICE
      started = ended
      for (let k = 0; k < SLICE; k++) await reference()
      ended = cpuMs()
      referenceMs += ended - started
      referenceCount += SLICE
    }
    if (s < 0) continue
    const rate = count / (stackMs / 1000)
    perSecond.push(Math.round(rate))
    relative.push(rate / (referenceCount / (referenceMs / 1000)))
  }
  const ratio = (values: number[]) => (values[values.length - 1] ?? 0) / (values[0] ?? 1)
  return { perSecond, firstToLast: ratio(perSecond), relative, relativeFirstToLast: ratio(relative) }
}

/**
 * 12: `runs` agent runs at once, each blocked inside its one tool call (full default stack), and the
 * heap they hold between them; then every tool answers and every run must complete.
 */
export async function concurrentRuns(runs = 10_000): Promise<{ runs: number; heapMB: number }> {
  const release: Array<() => void> = []
  let entered = 0
  const { defineTool } = await import('@shallot/core')
  const { z } = await import('zod')
  const blocking = defineTool({
    name: 'wait_for_it',
    description: 'Blocks until released',
    input: z.object({ id: z.number() }),
    effect: 'read',
    execute: ({ id }) =>
      new Promise<number>((resolve) => {
        entered++
        release.push(() => resolve(id))
      }),
  })
  const model: ModelAdapter = {
    generate: async ({ messages }) =>
      messages[messages.length - 1]?.role === 'tool'
        ? { text: 'done' }
        : { toolCalls: [{ id: 't', name: 'wait_for_it', args: { id: 1 } }] },
  }
  const agent = createAgent({ model, tools: [blocking], middleware: defaultMiddleware() })
  const before = collect()
  const outcomes = Array.from({ length: runs }, () => agent.run({ input: 'wait' }))
  while (entered < runs) await new Promise((resolve) => setImmediate(resolve))
  const during = collect()
  for (const answer of release) answer()
  const done = await Promise.all(outcomes)
  const completed = done.filter((o) => o.status === 'completed').length
  if (completed !== runs) throw new Error(`only ${completed} of ${runs} concurrent runs completed`)
  return { runs, heapMB: (during - before) / 1024 / 1024 }
}

/**
 * 13: `shallot sim --runs <runs> --seed 1`, the CLI's own code in this process, in CPU time per
 * simulated tool call: one run to warm up, then the median of `repeats` runs (the spread is the
 * fastest and the slowest of them). The calls are counted by running the same grid through
 * `simulate()` with a counting stack: the same seeds make the same calls.
 */
export async function simPerCall(
  runs = 1000,
  repeats = 3,
): Promise<{ runs: number; calls: number; cpuMs: number; usPerCall: number; cpuMsRange: [number, number] }> {
  const { main, simulate } = await import('@shallot/cli')
  const { createStack } = await import('@shallot/core')
  const { errorClassifier, panicCatcher, timeout } = await import('shallot')
  const once = async () => {
    const cpu = process.cpuUsage()
    const code = await main(['sim', '--runs', String(runs), '--seed', '1'], { out: () => {}, err: () => {} })
    const used = process.cpuUsage(cpu)
    if (code !== 0) throw new Error(`shallot sim exited ${code}`)
    return (used.user + used.system) / 1000
  }
  await once()
  const measured: number[] = []
  for (let i = 0; i < repeats; i++) measured.push(await once())
  measured.sort((a, b) => a - b)
  const cpuMs = measured[Math.floor(measured.length / 2)] as number
  let calls = 0
  const builds = [
    (env: Parameters<Parameters<typeof simulate>[0]['stack']>[0]) =>
      createStack({ ...env, middleware: [panicCatcher(), errorClassifier(), timeout({ ms: 2_000 })] }),
    (env: Parameters<Parameters<typeof simulate>[0]['stack']>[0]) =>
      createStack({ ...env, middleware: defaultMiddleware({ timeout: { ms: 2_000 } }) }),
  ]
  for (const build of builds) {
    for (const steps of [10, 50, 100, 200]) {
      await simulate({
        steps,
        runs,
        faultRate: 0.01,
        faults: ['timeout', 'rate_limit', 'server_error', 'connection_reset'],
        latencyMs: 0,
        effect: 'read',
        seed: 1,
        stack: (env) => {
          const stack = build(env)
          const dispatch = stack.dispatch
          return Object.assign(Object.create(stack), {
            dispatch: (...args: Parameters<typeof dispatch>) => {
              calls++
              return dispatch(...args)
            },
          })
        },
      })
    }
  }
  return {
    runs,
    calls,
    cpuMs,
    usPerCall: (cpuMs * 1000) / calls,
    cpuMsRange: [measured[0] as number, measured[measured.length - 1] as number],
  }
}
