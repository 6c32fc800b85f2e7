import { Writable } from 'node:stream'
import { createStack, defineTool, type LayerEntry, type Middleware, type StackOptions, ToolError } from '@shallot/core'
import pino from 'pino'
import { z } from 'zod'

const input = z.object({ id: z.number() })

/** A trivial read tool: what the happy path costs around nothing. */
export const readTool = defineTool({ name: 'lookup', description: 'Look up a number', input, effect: 'read', execute: ({ id }) => id + 1 })

/** The same, as a write (idempotency is active for it). */
export const writeTool = defineTool({ name: 'record', description: 'Record a number', input, effect: 'write', execute: ({ id }) => id + 1 })

/** `tool` with `count` called on every execution: a row can check what ran without a stack.on() listener. */
export function countingTool(tool: typeof writeTool, count: () => void) {
  return defineTool({
    ...tool,
    execute: (args, context) => {
      count()
      return tool.execute(args, context)
    },
  })
}

/** Fails every other call with a transient error: the cost of one failure and one retry. */
export function flakyTool() {
  let calls = 0
  return defineTool({
    name: 'flaky',
    description: 'Fails every other call',
    input,
    effect: 'read',
    execute: ({ id }) => {
      if (calls++ % 2 === 0) throw new ToolError('upstream_error', 'try again', { category: 'transient' })
      return id + 1
    },
  })
}

/** A pino logger writing to a stream that drops everything. */
export function nullPino() {
  const sink = new Writable({ write: (_chunk, _encoding, done) => done() })
  return pino({ level: 'info' }, sink)
}

export function stackOf(middleware: readonly LayerEntry<Middleware>[], tools: StackOptions['tools'], extra: Partial<StackOptions> = {}) {
  return createStack({ middleware, tools, ...extra })
}

let serial = 0
/**
 * A call with arguments never seen before in this process: a write with repeated arguments would
 * be an idempotent replay, not a write, and a read would measure caches that real traffic misses.
 */
export function distinctCall(name: string) {
  const id = serial++
  return { id: `c${id}`, name, args: { id } }
}
