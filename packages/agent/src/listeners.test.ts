import { createStack, defineTool, type Logger, type Middleware, type ModelAdapter, ToolError } from '@shallot/core'
import { describe, expect, it, vi } from 'vitest'
import { z } from 'zod'
import { createAgent } from './index.js'

const echo = defineTool({
  name: 'echo',
  description: 'Echo a message',
  input: z.object({ message: z.string() }),
  effect: 'read',
  execute: ({ message }) => message,
})

const missing = defineTool({
  name: 'read_file',
  description: 'Reads a file',
  input: z.object({ path: z.string() }),
  effect: 'read',
  execute: ({ path }) => {
    throw new ToolError('not_found', `file ${path} not found`)
  },
})

/** A layer that reports what it does, as every built-in layer does. */
const chatty: Middleware = async function chatty(ctx, next) {
  ctx.emit('chatty.before')
  ctx.log.info({ tool: ctx.call.name }, 'before')
  try {
    await next()
  } finally {
    ctx.emit('chatty.after')
    ctx.log.debug({ tool: ctx.call.name }, 'after')
  }
}

/** A pino-compatible logger whose chosen methods throw; `error` records what it is asked to write. */
function brokenLogger(throwing: readonly (keyof Logger)[]) {
  const errors: string[] = []
  const logger: Logger = {
    debug() {
      if (throwing.includes('debug')) throw new Error('debug transport down')
    },
    info() {
      if (throwing.includes('info')) throw new Error('info transport down')
    },
    warn() {
      if (throwing.includes('warn')) throw new Error('warn transport down')
    },
    error(_obj, msg) {
      if (throwing.includes('error')) throw new Error('error transport down')
      errors.push(msg ?? '')
    },
    child() {
      if (throwing.includes('child')) throw new Error('child bindings refused')
      return logger
    },
  }
  return { logger, errors }
}

describe('a throwing stack.on() listener', () => {
  it('never turns a success into tool_crashed nor a not_found into anything else, and is logged once', async () => {
    const { logger, errors } = brokenLogger([])
    const stack = createStack({ tools: [echo, missing], middleware: [chatty], logger })
    const heard: string[] = []
    stack.on(() => {
      throw new TypeError('listener bug')
    })
    stack.on((event) => heard.push(event.type))
    for (let i = 0; i < 3; i++) {
      expect(await stack.dispatch({ id: `e${i}`, name: 'echo', args: { message: 'hi' } })).toMatchObject({ ok: true, value: 'hi' })
      expect((await stack.dispatch({ id: `m${i}`, name: 'read_file', args: { path: 'a' } })).error).toMatchObject({ code: 'not_found' })
    }
    expect(errors.filter((line) => line.includes('stack.on() listener threw'))).toHaveLength(1)
    // The other listener still hears everything: per call, started, the two layer events, finished.
    expect(heard).toHaveLength(24)
    expect(heard.slice(0, 4)).toEqual(['call.started', 'chatty.before', 'chatty.after', 'call.finished'])
  })
})

describe('an async stack.on() listener that rejects', () => {
  it('is logged once like one that throws, never an unhandled rejection, and changes no outcome', async () => {
    const { logger, errors } = brokenLogger([])
    const stack = createStack({ tools: [echo, missing], middleware: [chatty], logger })
    let calls = 0
    // An async listener, as one that writes events to a database is: it rejects instead of throwing.
    stack.on(async () => {
      calls++
      throw new TypeError('database down')
    })
    for (let i = 0; i < 3; i++) {
      expect(await stack.dispatch({ id: `e${i}`, name: 'echo', args: { message: 'hi' } })).toMatchObject({ ok: true, value: 'hi' })
      expect((await stack.dispatch({ id: `m${i}`, name: 'read_file', args: { path: 'a' } })).error).toMatchObject({ code: 'not_found' })
    }
    // The rejections settle after the calls: vitest fails the file on an unhandled one.
    await new Promise((resolve) => setImmediate(resolve))
    expect(calls).toBe(24)
    expect(errors.filter((line) => line.includes('stack.on() listener threw'))).toHaveLength(1)
  })
})

describe('a logger whose methods throw', () => {
  it('never changes an outcome, and each failing method is reported once through logger.error', async () => {
    const { logger, errors } = brokenLogger(['info', 'debug', 'warn'])
    const stack = createStack({ tools: [echo, missing], middleware: [chatty], logger })
    for (let i = 0; i < 3; i++) {
      expect(await stack.dispatch({ id: `e${i}`, name: 'echo', args: { message: 'hi' } })).toMatchObject({ ok: true, value: 'hi' })
      expect((await stack.dispatch({ id: `m${i}`, name: 'read_file', args: { path: 'a' } })).error).toMatchObject({ code: 'not_found' })
    }
    expect(errors.filter((line) => line.includes('threw')).sort()).toEqual([
      expect.stringContaining('logger.debug() threw'),
      expect.stringContaining('logger.info() threw'),
    ])
  })

  it('keeps logging without bindings when child() throws, and warns the process once when error() throws too', async () => {
    const { logger } = brokenLogger(['child', 'info', 'debug', 'warn', 'error'])
    // Caught where the process would print them, so the test run's output stays clean; the count is what matters.
    const warnings: Error[] = []
    const emitWarning = vi.spyOn(process, 'emitWarning').mockImplementation((warning: string | Error, options?: unknown) => {
      const code = typeof options === 'object' && options !== null ? (options as { code?: string }).code : undefined
      warnings.push(Object.assign(typeof warning === 'string' ? new Error(warning) : warning, code === undefined ? {} : { code }))
    })
    try {
      const stack = createStack({ tools: [echo], middleware: [chatty], logger })
      for (let i = 0; i < 3; i++) {
        expect(await stack.dispatch({ id: `e${i}`, name: 'echo', args: { message: 'hi' } })).toMatchObject({ ok: true })
      }
      await new Promise((resolve) => setImmediate(resolve))
    } finally {
      emitWarning.mockRestore()
    }
    const ours = warnings.filter((w) => (w as Error & { code?: string }).code === 'SHALLOT_LOGGER_FAILED')
    // child, info and debug each fail, and error() cannot report them: one warning for each, not one per line.
    expect(ours.map((w) => /^logger\.(\w+)\(\) threw/.exec(w.message)?.[1]).sort()).toEqual(['child', 'debug', 'info'])
  })

  it('never stops a createAgent run', async () => {
    const { logger } = brokenLogger(['info', 'warn', 'child', 'debug'])
    const model: ModelAdapter = {
      generate: async ({ messages }) =>
        messages.length === 1 ? { toolCalls: [{ id: 'c1', name: 'echo', args: { message: 'hi' } }] } : { text: 'done', toolCalls: [] },
    }
    const agent = createAgent({ model, tools: [echo], middleware: [chatty], logger })
    expect(await agent.run({ input: 'say hi' })).toMatchObject({ status: 'completed', output: 'done' })
  })
})

describe('a middleware that calls next() twice in one attempt', () => {
  it('runs a write tool once: the second next() is refused with a MiddlewareUsageError that says why', async () => {
    let executions = 0
    const charge = defineTool({
      name: 'charge_card',
      description: 'Charges a card',
      input: z.object({ cents: z.number() }),
      effect: 'write',
      execute: () => {
        executions++
        return 'charged'
      },
    })
    let second: unknown
    const twice: Middleware = async function twice(_ctx, next) {
      await next()
      try {
        await next()
      } catch (err) {
        second = err
        throw err
      }
    }
    const stack = createStack({ tools: [charge], middleware: [twice] })
    await expect(stack.dispatch({ id: 'c1', name: 'charge_card', args: { cents: 500 } })).rejects.toMatchObject({
      kind: 'tool_crashed',
      message: expect.stringContaining('a second time in attempt 1'),
    })
    expect(executions).toBe(1)
    expect(second).toMatchObject({ name: 'MiddlewareUsageError', message: expect.stringContaining('increment ctx.attempt') })
  })

  it('still lets a layer repeat the call as a new attempt', async () => {
    let executions = 0
    const flaky = defineTool({
      name: 'flaky',
      description: '',
      input: z.object({}),
      effect: 'read',
      execute: () => {
        executions++
        if (executions === 1) throw new ToolError('upstream_error', 'try again')
        return 'ok'
      },
    })
    const again: Middleware = async function again(ctx, next) {
      try {
        await next()
      } catch {
        ctx.attempt++
        await next()
      }
    }
    const stack = createStack({ tools: [flaky], middleware: [again] })
    expect(await stack.dispatch({ id: 'c1', name: 'flaky', args: {} })).toMatchObject({ ok: true, attempts: 2 })
    expect(executions).toBe(2)
  })
})

describe('a pino logger at level silent', () => {
  it('gets no child per call while silent, and one with the call as bindings again once its level is raised', async () => {
    const { default: pino } = await import('pino')
    const { Writable } = await import('node:stream')
    const lines: Array<Record<string, unknown>> = []
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(JSON.parse(String(chunk)) as Record<string, unknown>)
        done()
      },
    })
    const logger = pino({ level: 'silent' }, sink)
    const child = vi.spyOn(logger, 'child')
    const stack = createStack({ tools: [echo], middleware: [chatty], logger })
    const events: string[] = []
    stack.on((event) => {
      // The layer's own events; call.started / call.finished are asserted in call-events.test.ts.
      if (!event.type.startsWith('call.')) events.push(event.type)
    })
    const quiet = await stack.dispatch({ id: 'c1', name: 'echo', args: { message: 'hi' } })
    expect(quiet).toMatchObject({ ok: true, value: 'hi' })
    expect(events).toEqual(['chatty.before', 'chatty.after'])
    expect(child).not.toHaveBeenCalled()

    logger.level = 'info'
    const loud = await stack.dispatch({ id: 'c2', name: 'echo', args: { message: 'ho' } })
    expect(loud).toMatchObject({ ok: true, value: 'ho' })
    expect(child).toHaveBeenCalledTimes(1)
    await new Promise((resolve) => setImmediate(resolve))
    expect(lines.map((line) => [line.msg, line.callId])).toEqual([
      ['before', 'c2'],
      ['tool call', 'c2'],
    ])
  })
})
