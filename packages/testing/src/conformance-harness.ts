// The stack, tool, probe and clock that middlewareConformance runs a layer in. Not exported by the package.
import { getEventListeners } from 'node:events'
import {
  createRun,
  createStack,
  defineTool,
  type Middleware,
  type MiddlewareDefinition,
  type MiddlewareEnv,
  type ToolContext,
  ToolError,
  type ToolExecuteContext,
} from '@shallot/core'
import { vi } from 'vitest'
import { z } from 'zod'
import { type ManualClock, manualClock } from './manual-clock.js'
import { seededRandom } from './seeded-random.js'

/** What the conformance tool does on each attempt. */
export type Behaviour = (attempt: number, context: ToolExecuteContext, clock: ManualClock) => Promise<unknown>
/** How a dispatched call settled. */
export type Outcome =
  | { settled: 'resolved'; result: Awaited<ReturnType<ReturnType<typeof createStack>['dispatch']>> }
  | { settled: 'rejected'; error: unknown }

export const ARGS = { id: 'ORD-2026-00042', items: [{ sku: 'shallot', qty: 2 }], note: { text: 'leave at the door' } }
const argsSchema = z.object({
  id: z.string(),
  items: z.array(z.object({ sku: z.string(), qty: z.number() })),
  note: z.object({ text: z.string() }),
})

/** Freezes `value` and everything in it. */
export function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const item of Object.values(value)) deepFreeze(item)
    Object.freeze(value)
  }
  return value
}

/** Lets pending promise callbacks and I/O callbacks run. */
export const flush = async () => {
  for (let i = 0; i < 10; i++) await Promise.resolve()
  await new Promise<void>((resolve) => setImmediate(resolve))
}

/** A retryable, safe-to-repeat soft failure. */
export const transient = () =>
  new ToolError('upstream_error', 'conformance: upstream failed', { category: 'transient', retryable: true, safeToRepeat: true })

/** One stack around the layer under test, with a probe inside it that watches every next(). */
export function harness(
  definition: MiddlewareDefinition,
  options: { validOptions?: unknown; env?: MiddlewareEnv | undefined },
  outer: Middleware[] = [],
) {
  const clock = manualClock()
  const controller = new AbortController()
  const run = createRun({ signal: controller.signal, maxSteps: 1000 })
  const layer = definition.build(options.validOptions, options.env)
  const seen = { calls: 0, afterAbort: 0, overlaps: 0 }
  const active = new WeakMap<ToolContext, number>()
  const probeLayer: Middleware = async function probe(ctx, next) {
    seen.calls++
    if (ctx.signal.aborted || controller.signal.aborted) seen.afterAbort++
    const now = (active.get(ctx) ?? 0) + 1
    if (now > 1) seen.overlaps++
    active.set(ctx, now)
    try {
      await next()
    } finally {
      active.set(ctx, (active.get(ctx) ?? 1) - 1)
    }
  }
  let behaviour: Behaviour = async () => 'ok'
  const tool = defineTool({
    name: 'conformance_tool',
    description: 'a tool whose behaviour each check sets',
    input: argsSchema,
    effect: 'idempotent',
    execute: (_args, context) => behaviour(context.attempt, context, clock),
  })
  const stack = createStack({ middleware: [...outer, layer, probeLayer], tools: [tool], clock, random: seededRandom(7) })
  let ids = 0

  function start(args: unknown = deepFreeze(structuredClone(ARGS))): Promise<Outcome> {
    const call = { id: `call-${++ids}`, name: 'conformance_tool', args }
    return stack.dispatch(call, { run }).then(
      (result): Outcome => ({ settled: 'resolved', result }),
      (error: unknown): Outcome => ({ settled: 'rejected', error }),
    )
  }

  /** Runs virtual time (and faked timers) until the call settles. */
  async function drive(pending: Promise<Outcome>): Promise<Outcome> {
    let outcome: Outcome | undefined
    void pending.then((o) => (outcome = o))
    // Time moves only while the call is pending, so a timer it leaves behind is still there to count.
    for (let round = 0; round < 200; round++) {
      await flush()
      if (outcome !== undefined) break
      await clock.runAll()
      await flush()
      if (outcome !== undefined) break
      if (vi.isFakeTimers()) await vi.advanceTimersToNextTimerAsync()
    }
    if (outcome === undefined) {
      throw new Error(`${definition.name}: a call never settled with all virtual time run; wait only on ctx.clock and ctx.signal`)
    }
    return outcome
  }

  function leftovers() {
    return {
      clockSleeps: clock.pending,
      timers: vi.isFakeTimers() ? vi.getTimerCount() : 0,
      abortListeners: getEventListeners(controller.signal, 'abort').length,
    }
  }

  return {
    clock,
    controller,
    probe: seen,
    start,
    drive,
    leftovers,
    setBehaviour: (next: Behaviour) => {
      behaviour = next
    },
    dispatch: (args?: unknown) => drive(start(args)),
  }
}

/** True when the call resolved to `ok: true`. */
export const isSuccess = (outcome: Outcome) => outcome.settled === 'resolved' && outcome.result.ok
