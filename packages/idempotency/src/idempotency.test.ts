import { createRun, createStack, defineTool, type Middleware, OptionsError, ToolError } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { type IdempotencyStore, idempotency, memoryIdempotencyStore } from './index.js'

const DAY = 24 * 60 * 60 * 1000

/** A card-charging write tool that counts how often it really ran, and can be told how to fail. */
function cardTool(options: { effect?: 'write' | 'idempotent' | 'read'; fail?: () => unknown } = {}) {
  const charges: Array<{ args: unknown; key: string | undefined }> = []
  const tool = defineTool({
    name: 'charge_card',
    description: 'Charge a card',
    input: z.object({ card: z.string(), amount: z.number(), currency: z.string().default('usd'), orderRef: z.string().optional() }),
    effect: options.effect ?? 'write',
    execute: (args, { idempotencyKey }) => {
      charges.push({ args, key: idempotencyKey })
      const failure = options.fail?.()
      if (failure !== undefined) throw failure
      return { chargeId: `ch_${charges.length}`, amount: args.amount }
    },
  })
  return { tool, charges }
}

/** A store wrapper that records every protocol call, to prove what reaches the store and what does not. */
function recording(store: IdempotencyStore) {
  const calls: Array<{ op: string; args: unknown[] }> = []
  const log =
    <A extends unknown[], R>(op: string, method: (...args: A) => R) =>
    (...args: A): R => {
      calls.push({ op, args })
      return method(...args)
    }
  const wrapped: IdempotencyStore = {
    begin: log('begin', store.begin),
    complete: log('complete', store.complete),
    release: log('release', store.release),
    markUnknown: log('markUnknown', store.markUnknown),
  }
  return { store: wrapped, calls }
}

const charge = (args: unknown, id = 'c') => ({ id, name: 'charge_card', args })

describe('idempotency: replay and keys', () => {
  it('replays a stored success instead of charging again, marked replayed and traced', async () => {
    const { tool, charges } = cardTool()
    const stack = createStack({ tools: [tool], middleware: [idempotency()] })
    const first = await stack.dispatch(charge({ card: 'c1', amount: 5 }))
    const second = await stack.dispatch(charge({ card: 'c1', amount: 5 }))
    expect(charges).toHaveLength(1)
    expect(first).toMatchObject({ ok: true, replayed: false, value: { chargeId: 'ch_1', amount: 5 } })
    expect(second).toMatchObject({ ok: true, replayed: true, value: { chargeId: 'ch_1', amount: 5 } })
    expect(first.trace.map((e) => e.type)).toEqual(['idempotency.stored'])
    expect(second.trace.map((e) => e.type)).toEqual(['idempotency.replayed'])
  })

  it('replays a call whose arguments list the same keys in another order, with other whitespace', async () => {
    const { tool, charges } = cardTool()
    const stack = createStack({ tools: [tool], middleware: [idempotency()] })
    await stack.dispatch(charge({ card: 'c1', amount: 5 }))
    const permuted = await stack.dispatch(charge('{ "amount": 5,\n  "card": "c1" }'))
    expect(permuted.replayed).toBe(true)
    expect(charges).toHaveLength(1)
  })

  it('treats arguments that differ only by a schema default as the same call', async () => {
    const { tool, charges } = cardTool()
    const stack = createStack({ tools: [tool], middleware: [idempotency()] })
    await stack.dispatch(charge({ card: 'c1', amount: 5 }))
    expect((await stack.dispatch(charge({ card: 'c1', amount: 5, currency: 'usd' }))).replayed).toBe(true)
    expect(charges).toHaveLength(1)
  })

  it('runs again when a value changes (derived key)', async () => {
    const { tool, charges } = cardTool()
    const stack = createStack({ tools: [tool], middleware: [idempotency()] })
    await stack.dispatch(charge({ card: 'c1', amount: 5 }))
    const changed = await stack.dispatch(charge({ card: 'c1', amount: 6 }))
    expect(changed).toMatchObject({ ok: true, replayed: false, value: { chargeId: 'ch_2', amount: 6 } })
    expect(charges).toHaveLength(2)
  })

  it('refuses an explicit key reused with a changed value as idempotency_mismatch, without running the tool', async () => {
    const { tool, charges } = cardTool()
    const stack = createStack({ tools: [tool], middleware: [idempotency({ keyFrom: 'orderRef' })] })
    await stack.dispatch(charge({ card: 'c1', amount: 5, orderRef: 'order-42' }))
    const reused = await stack.dispatch(charge({ card: 'c1', amount: 6, orderRef: 'order-42' }))
    expect(reused.ok).toBe(false)
    expect(reused.error).toMatchObject({ code: 'idempotency_mismatch', category: 'recoverable', retryable: false })
    expect(reused.content).toContain('order-42')
    expect(charges).toHaveLength(1)
    const same = await stack.dispatch(charge({ amount: 5, orderRef: 'order-42', card: 'c1' }))
    expect(same.replayed).toBe(true)
  })

  it('forwards one key to the tool, and keeps it across attempts', async () => {
    const { tool, charges } = cardTool({
      fail: () => (charges.length === 1 ? new ToolError('rate_limited', '429', { safeToRepeat: true }) : undefined),
    })
    const keys: Array<string | undefined> = []
    const twice: Middleware = async function twice(ctx, next) {
      keys.push(ctx.idempotencyKey)
      await next().catch(() => {
        ctx.attempt++
        keys.push(ctx.idempotencyKey)
        return next()
      })
    }
    const stack = createStack({ tools: [tool], middleware: [idempotency(), twice] })
    const result = await stack.dispatch(charge({ card: 'c1', amount: 5 }))
    expect(result.ok).toBe(true)
    expect(charges.map((c) => c.key)).toEqual([keys[0], keys[0]])
    expect(keys[0]).toMatch(/^[0-9a-f]{32}$/)
    expect(keys[1]).toBe(keys[0])
  })

  it('uses a key function when given one, and forwards that key', async () => {
    const { tool, charges } = cardTool()
    const stack = createStack({
      tools: [tool],
      middleware: [idempotency({ key: (_ctx, args) => `pay-${(args as { card: string }).card}` })],
    })
    await stack.dispatch(charge({ card: 'c1', amount: 5 }))
    expect(charges[0]?.key).toBe('pay-c1')
  })

  it('refuses a missing or malformed key from the arguments softly, before the store is touched', async () => {
    const { tool, charges } = cardTool()
    const { store, calls } = recording(memoryIdempotencyStore())
    const stack = createStack({ tools: [tool], middleware: [idempotency({ store, keyFrom: 'orderRef' })] })
    const missing = await stack.dispatch(charge({ card: 'c1', amount: 5 }))
    const tooLong = await stack.dispatch(charge({ card: 'c1', amount: 5, orderRef: 'x'.repeat(256) }))
    const control = await stack.dispatch(charge({ card: 'c1', amount: 5, orderRef: 'order-\u00e9' }))
    expect(missing.error).toMatchObject({ code: 'invalid_arguments' })
    expect(missing.content).toContain('is missing')
    expect(tooLong.content).toContain('the limit is 255')
    expect(control.content).toContain('printable ASCII')
    expect(calls).toEqual([])
    expect(charges).toEqual([])
  })

  it('accepts a key of exactly 255 printable characters', async () => {
    const { tool, charges } = cardTool()
    const stack = createStack({ tools: [tool], middleware: [idempotency({ keyFrom: 'orderRef' })] })
    const result = await stack.dispatch(charge({ card: 'c1', amount: 5, orderRef: `~ ${'k'.repeat(253)}` }))
    expect(result.ok).toBe(true)
    expect(charges).toHaveLength(1)
  })

  it('leaves arguments the schema refuses to the dispatcher, without a store record', async () => {
    const { tool } = cardTool()
    const { store, calls } = recording(memoryIdempotencyStore())
    const stack = createStack({ tools: [tool], middleware: [idempotency({ store })] })
    const result = await stack.dispatch(charge({ card: 'c1' }))
    expect(result.error).toMatchObject({ code: 'invalid_arguments' })
    expect(calls).toEqual([])
  })

  it('lets read tools through untouched, without a key', async () => {
    const { tool, charges } = cardTool({ effect: 'read' })
    const { store, calls } = recording(memoryIdempotencyStore())
    const stack = createStack({ tools: [tool], middleware: [idempotency({ store })] })
    await stack.dispatch(charge({ card: 'c1', amount: 5 }))
    await stack.dispatch(charge({ card: 'c1', amount: 5 }))
    expect(charges.map((c) => c.key)).toEqual([undefined, undefined])
    expect(calls).toEqual([])
  })

  it('never hands the raw arguments to the store: only a key, an arguments hash and the result', async () => {
    const { tool } = cardTool()
    const { store, calls } = recording(memoryIdempotencyStore())
    const stack = createStack({ tools: [tool], middleware: [idempotency({ store, scope: 'tenant-a' })] })
    await stack.dispatch(charge({ card: 'secret-card-4242', amount: 5 }))
    expect(JSON.stringify(calls)).not.toContain('secret-card-4242')
    expect(calls.map((c) => c.op)).toEqual(['begin', 'complete'])
    expect(calls[0]?.args[0]).toMatch(/^tenant-a [0-9a-f]{32}$/)
    expect(calls[0]?.args[1]).toMatch(/^[0-9a-f]{32}$/)
    expect(calls[1]?.args[2]).toEqual({ value: { amount: 5, chargeId: 'ch_1' } })
  })

  it('stores a value JSON cannot hold in its canonical spelling, so the replay is still defined', async () => {
    const tool = defineTool({ name: 'mint', description: '', input: z.object({}), execute: () => ({ big: 10n, at: new Date(0) }) })
    const stack = createStack({ tools: [tool], middleware: [idempotency()] })
    await stack.dispatch({ id: '1', name: 'mint', args: {} })
    const replay = await stack.dispatch({ id: '2', name: 'mint', args: {} })
    expect(replay).toMatchObject({ replayed: true, value: { big: '10n', at: '1970-01-01T00:00:00.000Z' } })
  })

  it('refuses a bad option at construction with its path and value', () => {
    expect(() => idempotency({ ttlMs: -1 })).toThrow(OptionsError)
    expect(() => idempotency({ scope: 'has space' })).toThrow(/scope/)
    expect(() => idempotency({ keyFrom: 'a', key: () => 'k' })).toThrow(/key or keyFrom/)
    expect(() => idempotency({ store: {} as IdempotencyStore })).toThrow(/store/)
  })

  it('checks an options object at every construction, one accepted before and changed since included', () => {
    const options = { ttlMs: 1000 }
    idempotency(options)
    options.ttlMs = -1
    expect(() => idempotency(options)).toThrow(/^idempotency\(\): option ttlMs: .*\(got -1\)$/)
    expect(() => idempotency(JSON.parse('{"__proto__": {"ttlMs": 1}}'))).toThrow(/unknown option "__proto__"/)
  })

  it('gives every layer made without options its own store', async () => {
    const { tool, charges } = cardTool()
    const first = createStack({ tools: [tool], middleware: [idempotency()] })
    const second = createStack({ tools: [tool], middleware: [idempotency()] })
    await first.dispatch(charge({ card: 'c1', amount: 5 }))
    expect((await first.dispatch(charge({ card: 'c1', amount: 5 }))).replayed).toBe(true)
    expect((await second.dispatch(charge({ card: 'c1', amount: 5 }))).replayed).toBe(false)
    expect(charges).toHaveLength(2)
  })
})

describe('idempotency: time and scope', () => {
  it('replays 1 ms before the TTL ends and runs the tool again once it has ended (manual clock)', async () => {
    const clock = manualClock()
    const { tool, charges } = cardTool()
    const stack = createStack({ clock, tools: [tool], middleware: [idempotency({ store: memoryIdempotencyStore({ now: clock.now }) })] })
    await stack.dispatch(charge({ card: 'c1', amount: 5 }))
    await clock.advance(DAY - 1)
    expect((await stack.dispatch(charge({ card: 'c1', amount: 5 }))).replayed).toBe(true)
    await clock.advance(1)
    expect((await stack.dispatch(charge({ card: 'c1', amount: 5 }))).replayed).toBe(false)
    expect(charges).toHaveLength(2)
  })

  it('keeps two scopes apart: the same arguments in another scope run and get their own result', async () => {
    const { tool, charges } = cardTool()
    const store = memoryIdempotencyStore()
    const tenantA = createStack({ tools: [tool], middleware: [idempotency({ store, scope: 'tenant-a', keyFrom: 'orderRef' })] })
    const tenantB = createStack({ tools: [tool], middleware: [idempotency({ store, scope: 'tenant-b', keyFrom: 'orderRef' })] })
    const args = { card: 'c1', amount: 5, orderRef: 'order-1' }
    const a = await tenantA.dispatch(charge(args))
    const b = await tenantB.dispatch(charge(args))
    expect(a).toMatchObject({ replayed: false, value: { chargeId: 'ch_1' } })
    expect(b).toMatchObject({ replayed: false, value: { chargeId: 'ch_2' } })
    expect((await tenantA.dispatch(charge(args))).value).toEqual({ chargeId: 'ch_1', amount: 5 })
    expect((await tenantB.dispatch(charge(args))).value).toEqual({ chargeId: 'ch_2', amount: 5 })
    expect(charges).toHaveLength(2)
  })

  it('takes the scope from a function of the call, e.g. the tenant in run state', async () => {
    const { tool, charges } = cardTool()
    const stack = createStack({ tools: [tool], middleware: [idempotency({ scope: (ctx) => String(ctx.run.state.tenant) })] })
    const runA = createRun({ id: 'r', state: { tenant: 'a' } })
    const runB = createRun({ id: 'r', state: { tenant: 'b' } })
    await stack.dispatch(charge({ card: 'c1', amount: 5 }), { run: runA })
    expect((await stack.dispatch(charge({ card: 'c1', amount: 5 }), { run: runB })).replayed).toBe(false)
    expect(charges).toHaveLength(2)
  })

  it('answers a scope function that returns garbage with a fatal error, without running the tool', async () => {
    const { tool, charges } = cardTool()
    const middleware = [idempotency({ scope: () => '' })]
    // Fatal: the stack's default policy ends the run with it; with escalation off, the model reads it.
    await expect(createStack({ tools: [tool], middleware }).dispatch(charge({ card: 'c1', amount: 5 }))).rejects.toMatchObject({
      name: 'LoopError',
      kind: 'fatal',
      details: { code: 'invalid_scope' },
    })
    const soft = createStack({ tools: [tool], middleware, escalate: { fatal: false } })
    const result = await soft.dispatch(charge({ card: 'c1', amount: 5 }))
    expect(result.error).toMatchObject({ code: 'invalid_scope', category: 'fatal' })
    expect(charges).toHaveLength(0)
  })

  it('derives the same key for a resumed run (same run id) and a new key for a new run', async () => {
    const { tool, charges } = cardTool()
    const store = memoryIdempotencyStore()
    const before = createStack({ tools: [tool], middleware: [idempotency({ store })] })
    await before.dispatch(charge({ card: 'c1', amount: 5 }), { run: createRun({ id: 'run-7' }) })
    const afterRestart = createStack({ tools: [tool], middleware: [idempotency({ store })] })
    expect((await afterRestart.dispatch(charge({ card: 'c1', amount: 5 }), { run: createRun({ id: 'run-7' }) })).replayed).toBe(true)
    expect((await afterRestart.dispatch(charge({ card: 'c1', amount: 5 }), { run: createRun({ id: 'run-8' }) })).replayed).toBe(false)
    expect(charges).toHaveLength(2)
  })

  it('refuses softly when the store fails before the call, and the tool does not run', async () => {
    const { tool, charges } = cardTool()
    const broken: IdempotencyStore = {
      begin: () => Promise.reject(new Error('SQLITE_BUSY')),
      complete: () => true,
      release: () => true,
      markUnknown: () => true,
    }
    const stack = createStack({ tools: [tool], middleware: [idempotency({ store: broken })] })
    const result = await stack.dispatch(charge({ card: 'c1', amount: 5 }))
    expect(result.error).toMatchObject({ code: 'store_unavailable', category: 'transient', safeToRepeat: true })
    expect(result.content).not.toContain('SQLITE_BUSY')
    expect(result.trace.map((e) => e.type)).toEqual(['idempotency.store_error', 'idempotency.refused'])
    expect(charges).toHaveLength(0)
  })
})
