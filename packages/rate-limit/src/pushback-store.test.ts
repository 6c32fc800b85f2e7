import { describe, expect, it } from 'vitest'
import { isPushbackStore, MAX_PUSHBACK_MS, memoryPushbackStore } from './index.js'
import { pushbackStoreContract } from './store-contract.js'

describe('memoryPushbackStore keeps the pushback store contract', () => {
  for (const c of pushbackStoreContract(() => memoryPushbackStore())) it(c.name, () => c.run())
})

describe('memoryPushbackStore', () => {
  it('keeps at most maxKeys keys: ended holds go first, then the oldest, which only lets a call go early', () => {
    const store = memoryPushbackStore({ maxKeys: 3 })
    store.hold('a', 1_000, 0)
    store.hold('b', 60_000, 0)
    store.hold('c', 60_000, 0)
    store.hold('d', 60_000, 2_000)
    expect(store.size).toBe(3)
    expect(store.heldFor('a', 2_000)).toBe(0)
    expect(store.heldFor('d', 2_000)).toBe(60_000)
    store.hold('e', 60_000, 2_000)
    expect(store.size).toBe(3)
    expect(store.heldFor('b', 2_000)).toBe(0)
    expect(store.heldFor('e', 2_000)).toBe(60_000)
  })

  it('replaces a hold in place that ends further ahead than MAX_PUSHBACK_MS', () => {
    const store = memoryPushbackStore()
    store.hold('k', MAX_PUSHBACK_MS * 10, 0)
    store.hold('k', 5_000, 0)
    expect(store.heldFor('k', 0)).toBe(5_000)
  })

  it.each([0, -1, 1.5, Number.NaN])('refuses maxKeys %s, naming it', (maxKeys) => {
    expect(() => memoryPushbackStore({ maxKeys })).toThrow(/memoryPushbackStore\(\): maxKeys must be a positive integer/)
  })

  it('is told apart from what is not a store', () => {
    expect(isPushbackStore(memoryPushbackStore())).toBe(true)
    expect(isPushbackStore({ hold() {} })).toBe(false)
    expect(isPushbackStore(null)).toBe(false)
  })
})
