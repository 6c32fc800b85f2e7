import { SpanStatusCode } from '@opentelemetry/api'
import { createStack, defineTool, type Middleware, OptionsError } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { timeout } from 'shallot'
import { afterEach, expect, it } from 'vitest'
import { z } from 'zod'
import { otelSdk } from '../test/world.js'
import { otel } from './index.js'

let sdk: ReturnType<typeof otelSdk> | undefined
afterEach(async () => {
  await sdk?.close()
  sdk = undefined
})

const echo = defineTool({
  name: 'echo',
  description: 'Echo',
  input: z.object({ text: z.string() }),
  effect: 'read',
  execute: ({ text }) => text,
})

/** A layer that emits one event with hostile fields, the way a third-party layer might. */
const hostile: Middleware = async (ctx, next) => {
  const circular: Record<string, unknown> = { name: 'loop' }
  circular.self = circular
  const fields = JSON.parse('{"__proto__": {"polluted": true}, "count": 3}') as Record<string, unknown>
  Object.assign(fields, {
    nan: Number.NaN,
    inf: Number.POSITIVE_INFINITY,
    huge: 'x'.repeat(100_000),
    token: 'Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJlc2lnbmF0dXJl',
    circular,
    nothing: undefined,
    list: ['a', 'password=hunter2'],
  })
  ctx.emit('third-party.event', fields)
  await next()
}

it('turns hostile event fields into safe attributes: no pollution, no NaN, capped, redacted, circular survives', async () => {
  sdk = otelSdk()
  const stack = createStack({ tools: [echo], middleware: [otel({ tracer: sdk.tracer, meter: sdk.meter }), hostile] })
  const result = await stack.dispatch({ id: 'c1', name: 'echo', args: { text: 'hi' } })
  expect(result.ok).toBe(true)
  const [span] = sdk.spans()
  const attributes = span?.events[0]?.attributes ?? {}
  expect(span?.events[0]?.name).toBe('third-party.event')
  expect(({} as Record<string, unknown>).polluted).toBeUndefined()
  expect(attributes.count).toBe(3)
  expect(attributes.nan).toBe('NaN')
  expect(attributes.inf).toBe('Infinity')
  expect(String(attributes.huge).length).toBeLessThanOrEqual(1100)
  expect(attributes.token).not.toContain('eyJ')
  expect(attributes.circular).toBe('[unserializable]')
  expect(attributes.list).toEqual(['a', 'password=[redacted]'])
  expect('nothing' in attributes).toBe(false)
})

it('a late result after the span ended becomes a zero-length child span, not a lost event', async () => {
  sdk = otelSdk()
  const clock = manualClock()
  const slow = defineTool({
    name: 'slow',
    description: 'Ignores its signal',
    input: z.object({}),
    effect: 'read',
    execute: async () => {
      await clock.sleep(5_000)
      return 'late'
    },
  })
  const stack = createStack({ tools: [slow], clock, middleware: [otel({ tracer: sdk.tracer, meter: sdk.meter }), timeout({ ms: 1_000 })] })
  const pending = stack.dispatch({ id: 'c1', name: 'slow', args: {} })
  await clock.advance(1_000)
  const result = await pending
  expect(result.error?.code).toBe('timeout')
  expect(sdk.spans().map((s) => s.name)).toEqual(['execute_tool slow'])
  await clock.advance(4_000)
  const [call, late] = sdk.spans()
  expect(call?.status.code).toBe(SpanStatusCode.ERROR)
  expect(late?.name).toBe('timeout.late slow')
  expect(late?.parentSpanContext?.spanId).toBe(call?.spanContext().spanId)
  expect(late?.attributes).toMatchObject({ after: 'expired', outcome: 'stopped', lateByMs: 4_000, 'gen_ai.tool.name': 'slow' })
})

it('a tracer that throws, or spans that throw, cost the trace and never the call', async () => {
  const broken = {
    startSpan() {
      throw new Error('exporter gone')
    },
  } as never
  const throwingSpans = {
    startSpan: () =>
      new Proxy(
        {},
        {
          get: () => () => {
            throw new Error('span closed')
          },
        },
      ),
  } as never
  for (const tracer of [broken, throwingSpans]) {
    const stack = createStack({ tools: [echo], middleware: [otel({ tracer }), hostile] })
    await expect(stack.dispatch({ id: 'c1', name: 'echo', args: { text: 'hi' } })).resolves.toMatchObject({ ok: true, value: 'hi' })
    await expect(stack.dispatch({ id: 'c2', name: 'echo', args: { text: 4 } })).resolves.toMatchObject({
      ok: false,
      error: { code: 'invalid_arguments' },
    })
  }
})

it('with no provider registered it records nothing and changes nothing', async () => {
  const stack = createStack({ tools: [echo], middleware: [otel()] })
  await expect(stack.dispatch({ id: 'c1', name: 'echo', args: { text: 'hi' } })).resolves.toMatchObject({ ok: true, value: 'hi' })
})

it('refuses bad options with their names', () => {
  expect(() => otel({ tracer: {} as never })).toThrow(OptionsError)
  expect(() => otel({ tracer: {} as never })).toThrow(/tracer/)
  expect(() => otel({ meter: 42 as never })).toThrow(/meter/)
  expect(() => otel({ secrets: [7 as never] })).toThrow(/secrets/)
  expect(() => otel({ exporter: 'otlp' } as never)).toThrow(/exporter/)
})
