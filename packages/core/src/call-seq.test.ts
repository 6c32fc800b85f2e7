import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { defineTool } from './define-tool.js'
import { createStack, type StackEvent } from './stack.js'
import type { Middleware } from './types.js'

const echo = defineTool({ name: 'echo', description: 'Echo', input: z.object({}), effect: 'read', execute: () => 'ok' })

describe('ctx.callSeq', () => {
  it('tells apart calls whose run and call ids repeat, in one stack and across stacks, on every event of the call', async () => {
    const seen: number[] = []
    const noting: Middleware = async (ctx, next) => {
      seen.push(ctx.callSeq)
      ctx.emit('noting.saw')
      await next()
    }
    const heard: StackEvent[] = []
    const stacks = [createStack({ tools: [echo], middleware: [noting] }), createStack({ tools: [echo], middleware: [noting] })]
    for (const stack of stacks) stack.on((event) => heard.push(event))
    await Promise.all(
      stacks.flatMap((stack) => [
        stack.dispatch({ id: 'c1', name: 'echo', args: {} }),
        stack.dispatch({ id: 'c1', name: 'echo', args: {} }),
      ]),
    )

    expect(new Set(seen).size).toBe(4)
    for (const seq of seen) {
      expect(heard.filter((e) => e.callSeq === seq).map((e) => e.type)).toEqual(['call.started', 'noting.saw', 'call.finished'])
    }
    expect(heard.every((e) => e.runId === 'default' && e.callId === 'c1')).toBe(true)
  })

  it('is not data: it stays out of the event’s keys, its copies and its JSON', async () => {
    const stack = createStack({ tools: [echo] })
    const heard: StackEvent[] = []
    stack.on((event) => heard.push(event))
    await stack.dispatch({ id: 'c1', name: 'echo', args: {} })
    for (const event of heard) {
      expect(event.callSeq).toBeGreaterThan(0)
      expect(Object.keys(event)).not.toContain('callSeq')
      expect({ ...event }.callSeq).toBeUndefined()
      expect(JSON.stringify(event)).not.toContain('callSeq')
    }
  })
})
