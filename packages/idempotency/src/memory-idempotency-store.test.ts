import { createRun, createStack, defineTool, OptionsError, ToolError } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { describe, expect, it, vi } from 'vitest'
import { z } from 'zod'
import { idempotency, memoryIdempotencyStore } from './index.js'
import { memoryIdempotencyStoreRawWriter } from './memory-idempotency-store.js'
import { idempotencyStoreContract } from './store-contract.js'

describe('memoryIdempotencyStore: the store contract', () => {
  const cases = idempotencyStoreContract((now) => {
    const store = memoryIdempotencyStore({ now })
    return { store, writeRaw: memoryIdempotencyStoreRawWriter(store) }
  })
  for (const c of cases) it(c.name, () => c.run())
})

describe('memoryIdempotencyStore: bounds', () => {
  const LEASE = 1000
  const TTL = 60_000

  async function settled(store: ReturnType<typeof memoryIdempotencyStore>, key: string) {
    const begun = await store.begin(key, 'h', LEASE, TTL)
    if (begun.status !== 'new') throw new Error(`expected new, got ${begun.status}`)
    await store.complete(key, begun.token, { value: key }, TTL)
  }

  it('never holds more than maxEntries settled records, dropping the least recently used first', async () => {
    const clock = manualClock()
    const store = memoryIdempotencyStore({ maxEntries: 3, now: clock.now })
    for (const key of ['a', 'b', 'c']) await settled(store, key)
    expect(await store.begin('a', 'h', LEASE, TTL)).toMatchObject({ status: 'done' }) // touch a: b is now oldest
    await settled(store, 'd')
    expect(store.size).toBe(3)
    expect(await store.begin('a', 'h', LEASE, TTL)).toMatchObject({ status: 'done' })
    expect(await store.begin('c', 'h', LEASE, TTL)).toMatchObject({ status: 'done' })
    expect(await store.begin('d', 'h', LEASE, TTL)).toMatchObject({ status: 'done' })
    expect(await store.begin('b', 'h', LEASE, TTL)).toMatchObject({ status: 'new' })
  })

  it('keeps exactly the most recently used records through thousands of uses, evictions and drops (checked against a model)', () => {
    const clock = manualClock()
    const maxEntries = 64
    const store = memoryIdempotencyStore({ maxEntries, now: clock.now })
    // The model: keys of settled records, least recently used first.
    let model: string[] = []
    let seed = 7
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31
      return seed / 2 ** 31
    }
    for (let step = 0; step < 5000; step++) {
      const key = `k${Math.floor(random() * 200)}`
      const begun = store.begin(key, 'h', LEASE, TTL)
      if (begun.status === 'done') {
        expect(model).toContain(key)
        model = [...model.filter((k) => k !== key), key]
        continue
      }
      expect(begun.status).toBe('new')
      expect(model).not.toContain(key)
      if (begun.status !== 'new') continue
      if (model.length >= maxEntries) model = model.slice(1)
      if (random() < 0.2) {
        expect(store.release(key, begun.token)).toBe(true)
        continue
      }
      expect(store.complete(key, begun.token, { value: step }, TTL)).toBe(true)
      model.push(key)
      expect(store.size).toBe(model.length)
    }
    store.clear()
    expect(store.size).toBe(0)
    expect(store.begin('k1', 'h', LEASE, TTL).status).toBe('new')
  })

  it('never evicts a call in flight or an unknown outcome to make room; full of them, begin fails closed', async () => {
    const clock = manualClock()
    const store = memoryIdempotencyStore({ maxEntries: 3, now: clock.now })
    const crashed = await store.begin('crashed', 'h', LEASE, TTL) // its lease will run out: lease_expired
    await clock.advance(LEASE)
    await store.begin('in-flight', 'h', LEASE, TTL)
    const failed = await store.begin('failed', 'h', LEASE, TTL)
    if (failed.status !== 'new' || crashed.status !== 'new') throw new Error('expected new records')
    store.markUnknown('failed', failed.token, TTL)
    expect(() => store.begin('fresh', 'h', LEASE, TTL)).toThrow(
      expect.objectContaining({ code: 'store_full', message: expect.stringContaining('never evicted') }),
    )
    expect(() => store.begin('fresh', 'h', LEASE, TTL)).toThrow(ToolError)
    expect(store.size).toBe(3)
    expect(store.begin('crashed', 'h', LEASE, TTL)).toEqual({ status: 'unknown', reason: 'lease_expired' })
    expect(store.begin('in-flight', 'h', LEASE, TTL)).toEqual({ status: 'in_flight' })
    expect(store.begin('failed', 'h', LEASE, TTL)).toEqual({ status: 'unknown', reason: 'recorded' })
  })

  it('evicts completed records, never pinned ones, when both kinds fill it', async () => {
    const store = memoryIdempotencyStore({ maxEntries: 3, now: manualClock().now })
    await store.begin('in-flight', 'h', LEASE, TTL)
    await settled(store, 'done-1')
    await settled(store, 'done-2')
    await store.begin('in-flight-2', 'h', LEASE, TTL) // evicts done-1, the least recently used completed record
    expect(store.begin('done-2', 'h', LEASE, TTL)).toEqual({ status: 'done', result: { value: 'done-2' } })
    expect(store.begin('done-1', 'h', LEASE, TTL).status).toBe('new') // evicted: runs again (the cost of a bound); evicts done-2
    // done-2 was evicted for it; now only pinned records are left, so nothing more fits.
    expect(() => store.begin('done-2', 'h', LEASE, TTL)).toThrow(expect.objectContaining({ code: 'store_full' }))
    expect(store.begin('in-flight', 'h', LEASE, TTL)).toEqual({ status: 'in_flight' })
    expect(store.size).toBe(3)
  })

  it('drops expired records it may not evict before it gives up for lack of room', async () => {
    const clock = manualClock()
    const store = memoryIdempotencyStore({ maxEntries: 2, now: clock.now })
    await store.begin('long', 'h', LEASE, 10 * TTL)
    await store.begin('short', 'h', LEASE, TTL) // expires first, behind a live record
    await clock.advance(LEASE + TTL)
    expect(store.begin('fresh', 'h', LEASE, TTL).status).toBe('new')
    expect(store.begin('long', 'h', LEASE, TTL)).toEqual({ status: 'unknown', reason: 'lease_expired' })
  })

  it('settles a record only with its own token, however the calls on the store interleave', () => {
    const clock = manualClock()
    const store = memoryIdempotencyStore({ maxEntries: 2, now: clock.now })
    const a = store.begin('a', 'h', LEASE, TTL)
    const b = store.begin('b', 'h', LEASE, TTL)
    if (a.status !== 'new' || b.status !== 'new') throw new Error('expected two new records')
    expect(store.complete('a', b.token, { value: 'b' }, TTL)).toBe(false)
    expect(store.complete('b', a.token, { value: 'a' }, TTL)).toBe(false)
    expect(store.complete('a', a.token, { value: 'a' }, TTL)).toBe(true)
    expect(store.release('b', b.token)).toBe(true)
    expect(store.complete('b', b.token, { value: 'b' }, TTL)).toBe(false)
    // 'd' takes the room of the evicted 'a': 'a' is gone, 'c' and 'd' keep their own arguments and results.
    const c = store.begin('c', 'h', LEASE, TTL)
    const d = store.begin('d', 'h2', LEASE, TTL)
    if (c.status !== 'new' || d.status !== 'new') throw new Error('expected two new records')
    expect(() => store.begin('a', 'h', LEASE, TTL)).toThrow(/holds 2 records, all calls in flight/)
    expect(store.begin('d', 'h', LEASE, TTL)).toEqual({ status: 'mismatch' })
    expect(store.complete('d', d.token, { value: 'd' }, TTL)).toBe(true)
    expect(store.complete('c', c.token, { value: 'c' }, TTL)).toBe(true)
    expect(store.begin('d', 'h2', LEASE, TTL)).toEqual({ status: 'done', result: { value: 'd' } })
    expect(store.begin('c', 'h', LEASE, TTL)).toEqual({ status: 'done', result: { value: 'c' } })
  })

  it('never settles a record that is gone, by clear() or dropped as expired to make room, with its old token', async () => {
    const clock = manualClock()
    const store = memoryIdempotencyStore({ maxEntries: 1, now: clock.now })
    const cleared = store.begin('a', 'h', LEASE, TTL)
    if (cleared.status !== 'new') throw new Error('expected a new record')
    store.clear()
    expect(store.complete('a', cleared.token, { value: 1 }, TTL)).toBe(false)
    const swept = store.begin('a', 'h', LEASE, TTL)
    if (swept.status !== 'new') throw new Error('expected a new record')
    await clock.advance(LEASE + TTL)
    expect(store.begin('b', 'h', LEASE, TTL).status).toBe('new') // drops the expired 'a' for room
    expect(store.complete('a', swept.token, { value: 1 }, TTL)).toBe(false)
    expect(store.markUnknown('a', swept.token, TTL)).toBe(false)
    expect(store.size).toBe(1)
    expect(store.begin('b', 'h', LEASE, TTL)).toEqual({ status: 'in_flight' })
  })

  it('through idempotency(): a full store refuses a new write softly (store_unavailable), and no write runs twice', async () => {
    const clock = manualClock()
    const store = memoryIdempotencyStore({ maxEntries: 2, now: clock.now })
    let executions = 0
    const chargeCard = defineTool({
      name: 'charge_card',
      description: 'Charge a card',
      input: z.object({ order: z.string() }),
      execute: () => {
        executions++
        throw new ToolError('timeout', 'the bank did not answer') // may have charged: outcome unknown
      },
    })
    const stack = createStack({ clock, tools: [chargeCard], middleware: [idempotency({ store, ttlMs: TTL })] })
    const charge = (order: string) => stack.dispatch({ id: order, name: 'charge_card', args: { order } })
    expect((await charge('o-1')).error?.code).toBe('timeout')
    expect((await charge('o-2')).error?.code).toBe('timeout')
    const refused = await charge('o-3')
    expect(refused.error).toMatchObject({ code: 'store_unavailable', category: 'transient', safeToRepeat: true })
    expect(refused.error?.message).toBe(
      'The idempotency store is full of calls in progress and calls whose outcome is unknown, so charge_card was not run.',
    )
    expect(refused.error?.hint).toBe('try the identical call again once other calls have finished; if this keeps happening, tell the user')
    expect(refused.trace.map((e) => e.type)).toEqual(['idempotency.store_error', 'idempotency.refused'])
    expect((await charge('o-1')).error?.code).toBe('outcome_unknown')
    expect((await charge('o-2')).error?.code).toBe('outcome_unknown')
    expect(executions).toBe(2)
    await clock.advance(TTL)
    expect((await charge('o-3')).error?.code).toBe('timeout') // the unknown outcomes expired: room again
    expect(executions).toBe(3)
  })

  it('sets no timer per key: expiry happens when a record is touched', async () => {
    const setTimeoutSpy = vi.spyOn(globalThis, 'setTimeout')
    const setIntervalSpy = vi.spyOn(globalThis, 'setInterval')
    const clock = manualClock()
    const store = memoryIdempotencyStore({ now: clock.now })
    for (let i = 0; i < 100; i++) await settled(store, `k${i}`)
    expect(setTimeoutSpy).not.toHaveBeenCalled()
    expect(setIntervalSpy).not.toHaveBeenCalled()
    await clock.advance(TTL)
    expect(await store.begin('k0', 'h', LEASE, TTL)).toMatchObject({ status: 'new' })
  })

  it('refuses a bad option with its name and value', () => {
    expect(() => memoryIdempotencyStore({ maxEntries: 0 })).toThrow(OptionsError)
    expect(() => memoryIdempotencyStore({ maxEntries: 0 })).toThrow(/maxEntries.*got 0/)
  })
})

describe('memoryIdempotencyStore in the real layer', () => {
  it('replays a completed write', async () => {
    let ran = 0
    const save = defineTool({
      name: 'save',
      description: 'save',
      input: z.object({ n: z.number() }),
      effect: 'write',
      execute: ({ n }) => ++ran + n,
    })
    const stack = createStack({ middleware: [idempotency({ store: memoryIdempotencyStore() })], tools: [save] })
    const run = createRun()
    const first = await stack.dispatch({ id: 'a', name: 'save', args: { n: 1 } }, { run })
    const again = await stack.dispatch({ id: 'b', name: 'save', args: { n: 1 } }, { run })
    expect([first.value, again.value, ran]).toEqual([2, 2, 1])
  })
})

describe('memoryIdempotencyStore: what a completed call stores', () => {
  it('replays the value a tool returned, and hands any other store the same value as plain JSON', async () => {
    const returned = { total: 42, items: [{ sku: 'a-1', qty: 2 }, null, 'note'], nested: { deep: { ok: true } } }
    const memory = memoryIdempotencyStore()
    const seen: string[] = []
    const store = {
      begin: memory.begin,
      release: memory.release,
      markUnknown: memory.markUnknown,
      complete: (key: string, token: string, result: { value?: unknown }, ttlMs: number) => {
        seen.push(JSON.stringify(result))
        expect(structuredClone(result)).toEqual({ value: returned })
        return memory.complete(key, token, result as never, ttlMs)
      },
    }
    let runs = 0
    const order = defineTool({
      name: 'place_order',
      description: 'Places an order',
      input: z.object({ sku: z.string() }),
      effect: 'write',
      execute: () => {
        runs++
        return returned
      },
    })
    const stack = createStack({ tools: [order], middleware: [idempotency({ store })] })
    const run = createRun()
    const first = await stack.dispatch({ id: '1', name: 'place_order', args: { sku: 'a-1' } }, { run })
    const again = await stack.dispatch({ id: '2', name: 'place_order', args: { sku: 'a-1' } }, { run })
    expect(runs).toBe(1)
    expect(first).toMatchObject({ ok: true, value: returned })
    expect(again).toMatchObject({ ok: true, value: returned, replayed: true })
    expect(seen.map((text) => JSON.parse(text))).toEqual([{ value: returned }])
  })
})
