import { trace } from '@opentelemetry/api'
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base'
import { createStack, defineTool, ToolError } from '@shallot/core'
import { afterEach, expect, it } from 'vitest'
import { z } from 'zod'
import { otelSdk } from '../test/world.js'
import { otel } from './index.js'

let sdk: ReturnType<typeof otelSdk> | undefined
afterEach(async () => {
  await sdk?.close()
  sdk = undefined
})

/**
 * A tool that starts a span of its own (`inner n`) under the active context, waits until the test
 * lets it go, then answers, or fails softly when `n` is odd.
 */
function gatedLookup() {
  const gates = new Map<number, () => void>()
  let arrived: () => void = () => {}
  const lookup = defineTool({
    name: 'lookup',
    description: 'Look a number up',
    input: z.object({ n: z.number() }),
    effect: 'read',
    async execute({ n }) {
      const inner = trace.getTracer('tool').startSpan(`inner ${n}`)
      await new Promise<void>((resolve) => {
        gates.set(n, resolve)
        arrived()
      })
      inner.end()
      if (n % 2 === 1) throw new ToolError('not_found', `no entry ${n}`)
      return `entry ${n}`
    },
  })
  const allArrived = (count: number) =>
    new Promise<void>((resolve) => {
      arrived = () => {
        if (gates.size === count) resolve()
      }
    })
  // Let the calls go last first, so no order of arrival can pair a span with its call.
  const releaseBackwards = () => {
    for (const n of [...gates.keys()].sort((a, b) => b - a)) gates.get(n)?.()
  }
  return { lookup, allArrived, releaseBackwards }
}

/** Every call's span, checked against the span its tool started: the outcome is that call's own. */
function expectEachSpanIsItsCall(spans: readonly ReadableSpan[], count: number) {
  const calls = spans.filter((s) => s.name === 'execute_tool lookup')
  expect(calls).toHaveLength(count)
  const inner = spans.filter((s) => s.name.startsWith('inner '))
  expect(inner).toHaveLength(count)
  const parents = new Set<string>()
  for (const span of inner) {
    const n = Number(span.name.slice('inner '.length))
    const parentId = span.parentSpanContext?.spanId
    const parent = calls.find((c) => c.spanContext().spanId === parentId)
    expect(parent?.attributes['shallot.outcome'], `the span of call ${n}`).toBe(n % 2 === 1 ? 'soft_error' : 'ok')
    parents.add(String(parentId))
  }
  expect(parents.size).toBe(count)
}

async function dispatchTogether(stacks: number, callsPerStack: number) {
  sdk = otelSdk()
  const tracing = otel({ tracer: sdk.tracer, meter: sdk.meter })
  const { lookup, allArrived, releaseBackwards } = gatedLookup()
  const all = allArrived(stacks * callsPerStack)
  const pending = Array.from({ length: stacks }, (_, s) => {
    const stack = createStack({ tools: [lookup], middleware: [tracing] })
    tracing.attach(stack)
    // No run: every stack's calls share the run id `default`, and the caller gives every call the id `c1`.
    return Array.from({ length: callsPerStack }, (_, i) => stack.dispatch({ id: 'c1', name: 'lookup', args: { n: s * callsPerStack + i } }))
  }).flat()
  await all
  releaseBackwards()
  const results = await Promise.all(pending)
  expect(results.map((r) => r.ok)).toEqual(results.map((_, n) => n % 2 === 0))
  return sdk.spans()
}

it('two stacks on one otel(), each dispatching call c1 without a run at once: each call has its own span', async () => {
  expectEachSpanIsItsCall(await dispatchTogether(2, 1), 2)
})

it('fifty calls with the same id at once, over two stacks: fifty spans, each with its own call’s outcome', async () => {
  expectEachSpanIsItsCall(await dispatchTogether(2, 25), 50)
})

it('a stack detached while its call is in flight leaves no span open: the span ends, its outcome unknown', async () => {
  sdk = otelSdk()
  const tracing = otel({ tracer: sdk.tracer, meter: sdk.meter })
  const { lookup, allArrived, releaseBackwards } = gatedLookup()
  const stack = createStack({ tools: [lookup], middleware: [tracing] })
  const detach = tracing.attach(stack)
  const arrived = allArrived(1)
  const pending = stack.dispatch({ id: 'c1', name: 'lookup', args: { n: 0 } })
  await arrived
  detach()
  expect(sdk.spans().find((s) => s.name === 'execute_tool lookup')?.attributes['shallot.outcome']).toBe('unknown')
  releaseBackwards()
  expect((await pending).ok).toBe(true)
  expect(sdk.spans().filter((s) => s.name === 'execute_tool lookup')).toHaveLength(1)
})
