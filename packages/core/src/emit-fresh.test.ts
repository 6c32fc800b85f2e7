import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { type Clock, createStack, defineTool, type Middleware, type StackEvent, type ToolContext } from './index.js'
import { emitFresh } from './kit.js'

const clock: Clock = { now: () => 42, sleep: async () => {} }

const echo = defineTool({
  name: 'echo',
  description: 'Echoes',
  input: z.object({ text: z.string() }),
  effect: 'read',
  execute: ({ text }) => text,
})

/** A layer that emits one event through emitFresh, as a built-in layer does on every call. */
const emitting: Middleware = async (ctx, next) => {
  await next()
  emitFresh(ctx, 'demo.stored', { key: 'k1', op: 'complete' })
}

describe('emitFresh', () => {
  it('puts the event in the trace and before listeners exactly as ctx.emit would, fields first', async () => {
    const fresh = createStack({ clock, tools: [echo], middleware: [emitting] })
    const plain = createStack({
      clock,
      tools: [echo],
      middleware: [
        async (ctx, next) => {
          await next()
          ctx.emit('demo.stored', { key: 'k1', op: 'complete' })
        },
      ],
    })
    const heard: StackEvent[] = []
    fresh.on((event) => {
      if (event.type === 'demo.stored') heard.push(event)
    })
    const a = await fresh.dispatch({ id: 'c1', name: 'echo', args: { text: 'hi' } })
    const b = await plain.dispatch({ id: 'c1', name: 'echo', args: { text: 'hi' } })
    expect(a.trace).toEqual([{ key: 'k1', op: 'complete', type: 'demo.stored', at: 42 }])
    expect(JSON.stringify(a.trace)).toBe(JSON.stringify(b.trace))
    expect(heard).toHaveLength(1)
    expect(heard[0]).toMatchObject({ key: 'k1', op: 'complete', type: 'demo.stored', runId: expect.any(String) })
  })

  it('stamps the event with a reading the caller just took, reading the clock no more', async () => {
    let readings = 0
    const counting: Clock = { now: () => ++readings * 100, sleep: async () => {} }
    const stamping: Middleware = async (ctx, next) => {
      await next()
      const at = ctx.clock.now()
      emitFresh(ctx, 'demo.stored', { key: 'k1', op: 'complete' }, at)
    }
    const stack = createStack({ clock: counting, tools: [echo], middleware: [stamping] })
    const before = readings
    const result = await stack.dispatch({ id: 'c1', name: 'echo', args: { text: 'hi' } })
    const stored = result.trace.find((e) => e.type === 'demo.stored')
    // The call's start, the layer's reading, the call's end: the event's time is the layer's, and nothing else read the clock.
    expect(readings - before).toBe(3)
    expect(stored?.at).toBe((before + 2) * 100)
  })

  it('goes through a ctx.emit that an outer layer replaced, so that layer still sees the event', async () => {
    const tagged: unknown[] = []
    const tagging: Middleware = async (ctx, next) => {
      const emit = ctx.emit.bind(ctx)
      ctx.emit = (type, fields) => {
        tagged.push(type)
        emit(type, { ...fields, tagged: true })
      }
      await next()
    }
    const stack = createStack({ clock, tools: [echo], middleware: [tagging, emitting] })
    const result = await stack.dispatch({ id: 'c1', name: 'echo', args: { text: 'hi' } })
    expect(tagged).toEqual(['demo.stored'])
    expect(result.trace).toEqual([{ key: 'k1', op: 'complete', tagged: true, type: 'demo.stored', at: 42 }])
  })

  it("hands a context that is not the stack's to its own emit", () => {
    const seen: unknown[] = []
    const ctx = { emit: (type: string, fields?: Record<string, unknown>) => seen.push([type, fields]) } as unknown as ToolContext
    emitFresh(ctx, 'demo.stored', { key: 'k1' })
    expect(seen).toEqual([['demo.stored', { key: 'k1' }]])
  })
})
