import { createStack, defineTool } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { type BreakerState, type BreakerStore, circuitBreaker } from './index.js'

const COOLDOWN_MS = 1_000
const MAX_COOLDOWN_MS = 5_000

/** A shared store whose every state says the circuit opened just now, for `openMs` (a server whose clock or script went wrong). */
function storeSaying(openMs: number): BreakerStore {
  const state = (now: number): BreakerState => ({
    circuit: 'open',
    generation: 1,
    counts: { failures: 0 },
    failures: 3,
    openedAt: now,
    openMs,
    opens: 1,
    probes: [],
    seq: 0,
  })
  let written: BreakerState | undefined
  return {
    get: () => written ?? state(0),
    update: (_key, change) => {
      written = change(written ?? state(0))
      return written
    },
  }
}

function stackWith(store: BreakerStore) {
  const clock = manualClock()
  let runs = 0
  const tool = defineTool({
    name: 'search',
    description: 'Search',
    input: z.object({}),
    effect: 'read',
    execute: () => {
      runs++
      return 'found'
    },
  })
  const breaker = circuitBreaker({ store, cooldownMs: COOLDOWN_MS, maxCooldownMs: MAX_COOLDOWN_MS })
  const stack = createStack({ tools: [tool], clock, middleware: [breaker] })
  return { clock, runs: () => runs, call: () => stack.dispatch({ id: 'c', name: 'search', args: {} }) }
}

describe('circuitBreaker: a stored cooldown is held to maxCooldownMs', () => {
  it.each([
    ['5000 (= maxCooldownMs)', 5_000],
    ['1e12', 1e12],
    ['Infinity', Number.POSITIVE_INFINITY],
  ])('a store saying the circuit stays open for %s refuses for maxCooldownMs at most, then lets a probe through', async (_, openMs) => {
    const { clock, runs, call } = stackWith(storeSaying(openMs))
    const refused = await call()
    expect(refused.error?.code).toBe('circuit_open')
    expect(refused.error?.retryAfterMs).toBeLessThanOrEqual(MAX_COOLDOWN_MS)
    await clock.advance(MAX_COOLDOWN_MS)
    expect((await call()).ok).toBe(true)
    expect(runs()).toBe(1)
  })
})
