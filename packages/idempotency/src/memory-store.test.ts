import { OptionsError } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { describe, expect, it, vi } from 'vitest'
import { memoryStore } from './index.js'
import { idempotencyStoreContract } from './store-contract.js'

describe('memoryStore: the store contract', () => {
  for (const c of idempotencyStoreContract((now) => memoryStore({ now }))) it(c.name, () => c.run())
})

describe('memoryStore: bounds', () => {
  const LEASE = 1000
  const TTL = 60_000

  async function settled(store: ReturnType<typeof memoryStore>, key: string) {
    const begun = await store.begin(key, 'h', LEASE, TTL)
    if (begun.status !== 'new') throw new Error(`expected new, got ${begun.status}`)
    await store.complete(key, begun.token, { value: key }, TTL)
  }

  it('never holds more than maxEntries settled records, dropping the least recently used first', async () => {
    const clock = manualClock()
    const store = memoryStore({ maxEntries: 3, now: clock.now })
    for (const key of ['a', 'b', 'c']) await settled(store, key)
    expect(await store.begin('a', 'h', LEASE, TTL)).toMatchObject({ status: 'done' }) // touch a: b is now oldest
    await settled(store, 'd')
    expect(store.size).toBe(3)
    expect(await store.begin('a', 'h', LEASE, TTL)).toMatchObject({ status: 'done' })
    expect(await store.begin('c', 'h', LEASE, TTL)).toMatchObject({ status: 'done' })
    expect(await store.begin('d', 'h', LEASE, TTL)).toMatchObject({ status: 'done' })
    expect(await store.begin('b', 'h', LEASE, TTL)).toMatchObject({ status: 'new' })
  })

  it('never evicts a record whose lease is live, so a call in flight keeps its guard', async () => {
    const store = memoryStore({ maxEntries: 2, now: manualClock().now })
    await store.begin('pending-1', 'h', LEASE, TTL)
    await store.begin('pending-2', 'h', LEASE, TTL)
    await settled(store, 'x')
    expect(store.size).toBe(3)
    expect(await store.begin('pending-1', 'h', LEASE, TTL)).toEqual({ status: 'in_flight' })
    expect(await store.begin('pending-2', 'h', LEASE, TTL)).toEqual({ status: 'in_flight' })
  })

  it('sets no timer per key: expiry happens when a record is touched', async () => {
    const setTimeoutSpy = vi.spyOn(globalThis, 'setTimeout')
    const setIntervalSpy = vi.spyOn(globalThis, 'setInterval')
    const clock = manualClock()
    const store = memoryStore({ now: clock.now })
    for (let i = 0; i < 100; i++) await settled(store, `k${i}`)
    expect(setTimeoutSpy).not.toHaveBeenCalled()
    expect(setIntervalSpy).not.toHaveBeenCalled()
    await clock.advance(TTL)
    expect(await store.begin('k0', 'h', LEASE, TTL)).toMatchObject({ status: 'new' })
  })

  it('refuses a bad option with its name and value', () => {
    expect(() => memoryStore({ maxEntries: 0 })).toThrow(OptionsError)
    expect(() => memoryStore({ maxEntries: 0 })).toThrow(/maxEntries.*got 0/)
  })
})
