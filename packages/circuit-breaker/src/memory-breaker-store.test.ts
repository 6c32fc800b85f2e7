import { OptionsError } from '@shallot/core'
import { describe, expect, it } from 'vitest'
import { breakerMachine } from './breaker-machine.js'
import { consecutive, memoryBreakerStore } from './index.js'

const machine = breakerMachine({
  policy: consecutive(),
  cooldownMs: 1000,
  cooldownGrowth: 1,
  maxCooldownMs: 1000,
  halfOpenProbes: 1,
  maxHalfOpenMs: 1000,
})
const state = machine.initial

describe('memoryBreakerStore', () => {
  it('forgets the least recently used key past maxKeys, counting reads as uses', () => {
    const store = memoryBreakerStore({ maxKeys: 2 })
    store.set('a', state)
    store.set('b', state)
    store.get('a')
    store.set('c', state)
    expect([store.peek('a'), store.peek('b'), store.peek('c')]).toEqual([state, undefined, state])
    expect(store.size).toBe(2)
  })

  it('does not count a peek as a use', () => {
    const store = memoryBreakerStore({ maxKeys: 2 })
    store.set('a', state)
    store.set('b', state)
    store.peek('a')
    store.set('c', state)
    expect(store.peek('a')).toBeUndefined()
  })

  it('writes nothing when change returns the current state', () => {
    const store = memoryBreakerStore()
    expect(store.update('a', (current) => current ?? state)).toBe(state)
    const next = { ...state, generation: 1 }
    expect(store.update('a', () => next)).toBe(next)
    expect(store.update('a', (current) => current as typeof state)).toBe(next)
    expect(store.size).toBe(1)
  })

  it('refuses a maxKeys that is not a positive integer', () => {
    expect(() => memoryBreakerStore({ maxKeys: 0 })).toThrow(OptionsError)
    expect(() => memoryBreakerStore({ maxKeys: 0 })).toThrow(/memoryBreakerStore\(\): option maxKeys: .*\(got 0\)/)
  })
})
