import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { defineMiddleware, defineTool, type Middleware, type ToolEffect, ToolError, type ToolResult } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { afterAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { ConfigError, createStackFromConfig, loadConfig } from './index.js'

const dir = mkdtempSync(join(tmpdir(), 'shallot-stack-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let files = 0
const write = (text: string) => {
  const file = join(dir, `shallot-${++files}.yaml`)
  writeFileSync(file, text)
  return file
}

/** Tools that fail `failures` times per call (with `error`), then answer; every execution is counted. */
function world(options: { failures?: number; error?: () => ToolError; slowMs?: Record<string, number> } = {}) {
  const clock = manualClock()
  const executions: string[] = []
  const { failures = 0, error = () => new ToolError('upstream_error', 'upstream failed', { retryable: true, safeToRepeat: true }) } =
    options
  const make = (name: string, effect: ToolEffect) =>
    defineTool({
      name,
      description: name,
      input: z.object({}).passthrough(),
      effect,
      execute: async (_args, { attempt, signal }) => {
        executions.push(name)
        const ms = options.slowMs?.[name]
        if (ms !== undefined) await clock.sleep(ms, signal)
        if (attempt <= failures) throw error()
        return `${name} done`
      },
    })
  const tools = [make('search', 'read'), make('lookup', 'read'), make('charge_card', 'write'), make('slow_report', 'read')]
  let ids = 0
  async function call(stack: { dispatch: (c: { id: string; name: string; args: unknown }) => Promise<ToolResult> }, name: string) {
    const pending = stack.dispatch({ id: `c${++ids}`, name, args: {} })
    await clock.runAll()
    return pending
  }
  return { clock, tools, executions, call }
}

const retryEvents = (result: ToolResult) => result.trace.filter((e) => e.type === 'retry.scheduled').map((e) => e.delayMs)

describe('createStackFromConfig', () => {
  it('builds the layers the file lists, in its order, with their options', async () => {
    const w = world({ failures: 2 })
    const config = await loadConfig(
      write('stack:\n  - retry: { backoff: constant, baseMs: 100, maxAttempts: 3 }\n  - timeout: { ms: 1000 }\n'),
    )
    const stack = createStackFromConfig(config, { tools: w.tools, clock: w.clock })
    const result = await w.call(stack, 'search')
    expect(result).toMatchObject({ ok: true, attempts: 3, value: 'search done' })
    expect(retryEvents(result)).toEqual([100, 100])
  })

  it('gives a tool its own instance of a layer: a named policy replaces, an object merges over the stack entry', async () => {
    const w = world({ failures: 10 })
    const config = await loadConfig(
      write(`
stack:
  - retry: quick
policies:
  quick: { backoff: constant, baseMs: 10, maxAttempts: 3 }
  patient: { backoff: constant, baseMs: 500, maxAttempts: 5 }
tools:
  search: { retry: patient }
  lookup: { retry: { maxAttempts: 2 } }
`),
    )
    const stack = createStackFromConfig(config, { tools: w.tools, clock: w.clock })
    const search = await w.call(stack, 'search')
    const lookup = await w.call(stack, 'lookup')
    const report = await w.call(stack, 'slow_report')
    expect([search.attempts, retryEvents(search)]).toEqual([5, [500, 500, 500, 500]])
    expect([lookup.attempts, retryEvents(lookup)]).toEqual([2, [10]])
    expect([report.attempts, retryEvents(report)]).toEqual([3, [10, 10]])
  })

  it('skips a layer for a tool whose override is none', async () => {
    const w = world({ failures: 1 })
    const config = await loadConfig(write('stack:\n  - retry: { backoff: constant, baseMs: 10 }\ntools:\n  search: { retry: none }\n'))
    const stack = createStackFromConfig(config, { tools: w.tools, clock: w.clock })
    expect(await w.call(stack, 'search')).toMatchObject({ ok: false, attempts: 1, error: { code: 'upstream_error' } })
    expect(await w.call(stack, 'lookup')).toMatchObject({ ok: true, attempts: 2 })
  })

  it("gives one tool a longer timeout, merged over the stack's", async () => {
    const w = world({ slowMs: { slow_report: 10_000, search: 10_000 } })
    const config = await loadConfig(write('stack:\n  - timeout: { ms: 5000 }\ntools:\n  slow_report:\n    timeout: { ms: 20000 }\n'))
    const stack = createStackFromConfig(config, { tools: w.tools, clock: w.clock })
    expect(await w.call(stack, 'slow_report')).toMatchObject({ ok: true, value: 'slow_report done' })
    expect(await w.call(stack, 'search')).toMatchObject({ ok: false, error: { code: 'timeout' } })
  })

  it('creates each layer instance once, when the config is applied, never per call', async () => {
    const w = world()
    let created = 0
    const counted = defineMiddleware({
      name: 'counted',
      options: z.strictObject({ label: z.string().default('base') }),
      create: () => {
        created++
        return async function counted(_ctx, next) {
          await next()
        }
      },
    })
    const config = await loadConfig(
      write('stack:\n  - counted\ntools:\n  search: { counted: { label: own } }\n  lookup: { counted: { label: other } }\n'),
      {
        middleware: [counted],
      },
    )
    const stack = createStackFromConfig(config, { tools: w.tools, clock: w.clock })
    expect(created).toBe(3)
    for (let i = 0; i < 10; i++) for (const name of ['search', 'lookup', 'charge_card']) await w.call(stack, name)
    expect(created).toBe(3)
  })

  it("overrides a tool's effect for every layer: a write tool the config calls idempotent is retried", async () => {
    const notSafe = () =>
      new ToolError('upstream_error', 'upstream failed after the request was sent', { retryable: true, safeToRepeat: false })
    const seen: string[] = []
    const spy = defineMiddleware({
      name: 'effect-spy',
      options: z.strictObject({}),
      create: (): Middleware =>
        async function effectSpy(ctx, next) {
          seen.push(`${ctx.tool?.name}:${ctx.tool?.effect}`)
          await next()
        },
    })
    const text = (effect: string) => `stack:\n  - effect-spy\n  - retry: { backoff: constant, baseMs: 10 }\n${effect}`
    const plain = world({ failures: 1, error: notSafe })
    const asWritten = createStackFromConfig(await loadConfig(write(text('')), { middleware: [spy] }), {
      tools: plain.tools,
      clock: plain.clock,
    })
    expect(await plain.call(asWritten, 'charge_card')).toMatchObject({ ok: false, attempts: 1 })

    const w = world({ failures: 1, error: notSafe })
    const config = await loadConfig(write(text('tools:\n  charge_card: { effect: idempotent }\n')), { middleware: [spy] })
    const stack = createStackFromConfig(config, { tools: w.tools, clock: w.clock })
    expect(await w.call(stack, 'charge_card')).toMatchObject({ ok: true, attempts: 2 })
    expect(seen).toEqual(['charge_card:write', 'charge_card:idempotent'])
    expect(stack.tools.get('charge_card')?.effect).toBe('write')
  })

  it('refuses a config naming a tool the stack does not have, with the line and the nearest name', async () => {
    const w = world()
    const file = write('stack: [retry]\ntools:\n  chrage_card: { retry: none }\n')
    const config = await loadConfig(file)
    const err = (() => {
      try {
        createStackFromConfig(config, { tools: w.tools })
      } catch (e) {
        return e
      }
    })()
    expect(ConfigError.is(err)).toBe(true)
    expect(err).toMatchObject({ file, line: 3, path: 'tools.chrage_card', hint: "did you mean 'charge_card'?" })
  })

  it('maps an options error found while building a layer to its line in the file', async () => {
    const w = world()
    const config = await loadConfig(write('stack:\n  - circuit-breaker:\n      cooldownMs: 1000\n      maxCooldownMs: 10\n'))
    expect(() => createStackFromConfig(config, { tools: w.tools })).toThrow(
      expect.objectContaining({ name: 'ConfigError', path: 'stack[0].circuit-breaker.maxCooldownMs', line: 4 }),
    )
  })

  it('takes only configs made by loadConfig', () => {
    expect(() => createStackFromConfig({ stack: [] } as never, { tools: [] })).toThrow(/takes a config from loadConfig/)
  })
})
