import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createStack, defineTool, LoopError, type Middleware } from './index.js'

const echo = defineTool({
  name: 'echo',
  description: 'Echo a message',
  input: z.object({ message: z.string() }),
  effect: 'read',
  execute: ({ message }) => message,
})

describe('createStack', () => {
  it('runs the layers around the tool and resolves to an ok result', async () => {
    const events: string[] = []
    const layer =
      (name: string): Middleware =>
      async (_ctx, next) => {
        events.push(`${name}:in`)
        await next()
        events.push(`${name}:out`)
      }
    const stack = createStack({ middleware: [layer('a'), layer('b')], tools: [echo] })
    const result = await stack.dispatch({ id: 'c1', name: 'echo', args: { message: 'hi' } })
    expect(result).toMatchObject({ ok: true, content: 'hi', value: 'hi', attempts: 1, replayed: false })
    expect(events).toEqual(['a:in', 'b:in', 'b:out', 'a:out'])
  })

  it('ends the run with tool_crashed when a plain Error escapes a stack without a panic catcher', async () => {
    const boom = defineTool({
      name: 'boom',
      description: '',
      input: z.object({}),
      execute: () => {
        throw new Error('x')
      },
    })
    const stack = createStack({ tools: [boom] })
    await expect(stack.dispatch({ id: 'c', name: 'boom', args: {} })).rejects.toSatisfy(
      (e: unknown) => LoopError.is(e) && e.kind === 'tool_crashed',
    )
  })
})

describe('the execute context', () => {
  it('tells the tool which call it serves, with the guarded arguments', async () => {
    const seen: unknown[] = []
    const spy = defineTool({
      name: 'spy',
      description: 'Records its call',
      input: z.object({ n: z.number() }),
      effect: 'read',
      execute: (_args, { call, attempt, idempotencyKey }) => {
        seen.push({ call, attempt, idempotencyKey })
        return 'ok'
      },
    })
    const stack = createStack({ tools: [spy] })
    await stack.dispatch({ id: 'call-7', name: 'spy', args: '{"n": 3}' })
    expect(seen).toEqual([{ call: { id: 'call-7', name: 'spy', args: { n: 3 } }, attempt: 1, idempotencyKey: undefined }])
  })
})
