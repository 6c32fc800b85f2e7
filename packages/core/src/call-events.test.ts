import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import {
  type CallFinishedEvent,
  type CallStartedEvent,
  type Clock,
  createRun,
  createStack,
  defineTool,
  type Logger,
  type Middleware,
  type StackEvent,
  ToolError,
} from './index.js'

/** A clock that moves only when a layer sleeps on it. */
function virtualClock(): Clock {
  let now = 1000
  return {
    now: () => now,
    async sleep(ms) {
      now += ms
    },
  }
}

const SECRET = 'sk-live-abcdef123456'

const write = defineTool({
  name: 'write_file',
  description: 'Writes a file',
  input: z.object({ path: z.string() }),
  effect: 'write',
  execute: ({ path }) => {
    if (path === 'missing') throw new ToolError('not_found', `no directory for ${path} (key ${SECRET})`)
    if (path === 'fatal') throw new ToolError('permission_denied', 'the disk is read-only', { category: 'fatal' })
    return `wrote ${path}`
  },
})

/** A layer that takes 250 ms of the clock and reports it. */
const slow: Middleware = async function slow(ctx, next) {
  ctx.emit('slow.waited', { ms: 250 })
  await ctx.clock.sleep(250)
  await next()
}

describe('call.started and call.finished', () => {
  it('frame every call: started before any layer, finished after it settles, with the fields a span needs', async () => {
    const stack = createStack({ tools: [write], middleware: [slow], clock: virtualClock(), secrets: [SECRET] })
    const heard: StackEvent[] = []
    stack.on((event) => heard.push(event))
    const run = createRun({ id: 'r1' })
    run.turn = 3
    await stack.dispatch({ id: 'c1', name: 'write_file', args: { path: 'a.txt' } }, { run })
    expect(heard.map((e) => e.type)).toEqual(['call.started', 'slow.waited', 'call.finished'])
    const started = heard[0] as CallStartedEvent
    expect(started).toEqual({ type: 'call.started', at: 1000, runId: 'r1', callId: 'c1', tool: 'write_file', turn: 3, effect: 'write' })
    expect(heard[2]).toEqual({
      type: 'call.finished',
      at: 1250,
      runId: 'r1',
      callId: 'c1',
      tool: 'write_file',
      turn: 3,
      outcome: 'ok',
      code: undefined,
      category: undefined,
      kind: undefined,
      message: undefined,
      attempts: 1,
      executions: 1,
      replayed: false,
      durationMs: 250,
    })
  })

  it('name a soft error by code with its message sanitized, and a hard stop by kind', async () => {
    const stack = createStack({ tools: [write], secrets: [SECRET] })
    const finished: CallFinishedEvent[] = []
    stack.on((event) => event.type === 'call.finished' && finished.push(event as CallFinishedEvent))
    const soft = await stack.dispatch({ id: 's', name: 'write_file', args: { path: 'missing' } })
    expect(soft.ok).toBe(false)
    await expect(stack.dispatch({ id: 'h', name: 'write_file', args: { path: 'fatal' } })).rejects.toMatchObject({ kind: 'fatal' })
    await stack.dispatch({ id: 'u', name: 'no_such_tool', args: {} })
    const [missing, fatal, unknown] = finished
    expect(missing).toMatchObject({ callId: 's', outcome: 'soft_error', code: 'not_found', category: 'recoverable' })
    expect(missing?.message).toContain('no directory for missing')
    expect(missing?.message).not.toContain(SECRET)
    expect(missing?.message).toBe(soft.error?.message)
    expect(fatal).toMatchObject({ callId: 'h', outcome: 'hard_error', kind: 'fatal', code: 'permission_denied' })
    expect(unknown).toMatchObject({ callId: 'u', outcome: 'soft_error', code: 'unknown_tool', executions: 0 })
  })

  it('frame a call cancelled before it settles: the rejection comes with call.finished as a hard error', async () => {
    const hang = defineTool({ name: 'hang', description: 'Never answers', input: z.object({}), execute: () => new Promise(() => {}) })
    const stack = createStack({ tools: [hang] })
    const heard: StackEvent[] = []
    stack.on((event) => heard.push(event))
    const controller = new AbortController()
    const call = stack.dispatch({ id: 'c', name: 'hang', args: {} }, { signal: controller.signal })
    await Promise.resolve()
    controller.abort()
    await expect(call).rejects.toMatchObject({ kind: 'cancelled' })
    expect(heard.map((e) => [e.type, e.outcome, e.kind])).toEqual([
      ['call.started', undefined, undefined],
      ['call.finished', 'hard_error', 'cancelled'],
    ])
  })
})

describe('the tool call line', () => {
  it('carries the soft error’s message, sanitized, so an operator reads what the model read', async () => {
    const lines: Array<[string, Record<string, unknown>]> = []
    const logger = {
      debug() {},
      info: (fields: Record<string, unknown>, msg: string) => lines.push([msg, fields]),
      warn() {},
      error() {},
      child: () => logger,
    } as unknown as Logger
    const stack = createStack({ tools: [write], logger, secrets: [SECRET] })
    const result = await stack.dispatch({ id: 's', name: 'write_file', args: { path: 'missing' } })
    const [, fields] = lines.find(([msg]) => msg === 'tool call') ?? []
    expect(fields).toMatchObject({ outcome: 'soft_error', code: 'not_found', message: result.error?.message })
    expect(String(fields?.message)).not.toContain(SECRET)
    expect(String(fields?.message)).toContain('no directory for missing')
  })
})

describe('hostile listeners', () => {
  it('a listener that throws on call.started changes no outcome and still hears call.finished', async () => {
    const stack = createStack({ tools: [write] })
    const heard: string[] = []
    stack.on((event) => {
      heard.push(event.type)
      if (event.type === 'call.started') throw new TypeError('listener bug')
    })
    const ok = await stack.dispatch({ id: 'c1', name: 'write_file', args: { path: 'a' } })
    const soft = await stack.dispatch({ id: 'c2', name: 'write_file', args: { path: 'missing' } })
    expect(ok).toMatchObject({ ok: true, value: 'wrote a' })
    expect(soft.error?.code).toBe('not_found')
    expect(heard).toEqual(['call.started', 'call.finished', 'call.started', 'call.finished'])
  })

  it('a listener that unsubscribes itself during call.started hears nothing more, and the others hear everything', async () => {
    const stack = createStack({ tools: [write], middleware: [slow], clock: virtualClock() })
    const once: string[] = []
    const all: string[] = []
    const off = stack.on((event) => {
      once.push(event.type)
      off()
    })
    stack.on((event) => all.push(event.type))
    expect(await stack.dispatch({ id: 'c1', name: 'write_file', args: { path: 'a' } })).toMatchObject({ ok: true })
    await stack.dispatch({ id: 'c2', name: 'write_file', args: { path: 'b' } })
    expect(once).toEqual(['call.started'])
    expect(all).toEqual(['call.started', 'slow.waited', 'call.finished', 'call.started', 'slow.waited', 'call.finished'])
  })

  it('a listener added during a call hears no call.finished without its call.started', async () => {
    const stack = createStack({ tools: [write], middleware: [slow], clock: virtualClock() })
    const late: string[] = []
    const subscribeMidCall: Middleware = async (_ctx, next) => {
      stack.on((event) => late.push(`${event.type} ${event.callId}`))
      await next()
    }
    stack.setMiddleware([subscribeMidCall])
    await stack.dispatch({ id: 'c1', name: 'write_file', args: { path: 'a' } })
    stack.setMiddleware([])
    await stack.dispatch({ id: 'c2', name: 'write_file', args: { path: 'b' } })
    expect(late).toEqual(['call.started c2', 'call.finished c2'])
  })

  it('10,000 calls with no listener record no call event anywhere: a listener subscribed after them hears only what follows', async () => {
    const stack = createStack({ tools: [write] })
    const off = stack.on(() => {})
    off()
    for (let i = 0; i < 10_000; i++) {
      const result = await stack.dispatch({ id: `c${i}`, name: 'write_file', args: { path: 'a' } })
      if (!result.ok || result.trace.length !== 0) throw new Error(`call ${i} recorded ${JSON.stringify(result.trace)}`)
    }
    const heard: StackEvent[] = []
    stack.on((event) => heard.push(event))
    await stack.dispatch({ id: 'next', name: 'write_file', args: { path: 'a' } })
    expect(heard.map((e) => `${e.type} ${e.callId}`)).toEqual(['call.started next', 'call.finished next'])
  })
})

// readme:start
/** Prints each call's outcome and duration; returns the unsubscribe function. */
export function printCalls(stack: ReturnType<typeof createStack>, print: (line: string) => void) {
  return stack.on((event: StackEvent) => {
    if (event.type === 'call.finished') print(`${event.tool} ${String(event.outcome)} in ${String(event.durationMs)} ms`)
  })
}
// readme:end

describe('the README sample', () => {
  it('is in the README verbatim and prints one line per call', async () => {
    const source = readFileSync(new URL('./call-events.test.ts', import.meta.url), 'utf8')
    const sample = source.slice(source.indexOf('// readme:start\n') + 16, source.indexOf('// readme:end'))
    expect(readFileSync(new URL('../README.md', import.meta.url), 'utf8')).toContain(sample)
    const stack = createStack({ tools: [write], middleware: [slow], clock: virtualClock() })
    const lines: string[] = []
    const stop = printCalls(stack, (line) => lines.push(line))
    await stack.dispatch({ id: 'c1', name: 'write_file', args: { path: 'a' } })
    await stack.dispatch({ id: 'c2', name: 'write_file', args: { path: 'missing' } })
    stop()
    await stack.dispatch({ id: 'c3', name: 'write_file', args: { path: 'a' } })
    expect(lines).toEqual(['write_file ok in 250 ms', 'write_file soft_error in 250 ms'])
  })
})
