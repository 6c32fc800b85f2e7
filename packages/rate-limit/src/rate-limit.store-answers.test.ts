import { createAgent } from '@shallot/agent'
import { createStack, defineTool, type ModelAdapter, type ToolResult } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { type RateLimitStore, rateLimit } from './index.js'

// Every shape of number a store could answer, against a layer that lets a call wait 1000 ms at most.
const MAX_WAIT_MS = 1_000
const STORE_TIMEOUT_MS = 50
// limit 1 per second: the longest wait an honest store can propose under this rule is maxWaitMs + one interval.
const RULE = { limit: 1, perMs: 1_000, maxWaitMs: MAX_WAIT_MS, storeTimeoutMs: STORE_TIMEOUT_MS }

type Verdict = 'runs' | 'refused' | 'garbage'

const throwingGetter = {
  admitted: true,
  get waitMs(): number {
    throw new Error('the getter broke')
  },
}

const ANSWERS: [string, () => unknown, Verdict][] = [
  ['admitted, waitMs 5000 > maxWaitMs', () => ({ admitted: true, waitMs: 5_000 }), 'refused'],
  ['admitted, waitMs 1e12', () => ({ admitted: true, waitMs: 1e12 }), 'refused'],
  ['refused, waitMs 1e12', () => ({ admitted: false, waitMs: 1e12 }), 'refused'],
  ['admitted, waitMs Infinity', () => ({ admitted: true, waitMs: Number.POSITIVE_INFINITY }), 'garbage'],
  ['refused, waitMs Infinity', () => ({ admitted: false, waitMs: Number.POSITIVE_INFINITY }), 'garbage'],
  ['admitted, waitMs -Infinity', () => ({ admitted: true, waitMs: Number.NEGATIVE_INFINITY }), 'garbage'],
  ['admitted, waitMs NaN', () => ({ admitted: true, waitMs: Number.NaN }), 'garbage'],
  ['admitted, waitMs -1', () => ({ admitted: true, waitMs: -1 }), 'garbage'],
  ['admitted, waitMs "5"', () => ({ admitted: true, waitMs: '5' }), 'garbage'],
  ['admitted, waitMs null', () => ({ admitted: true, waitMs: null }), 'garbage'],
  ['null', () => null, 'garbage'],
  ['a getter that throws', () => throwingGetter, 'garbage'],
  [
    'a then getter that throws',
    () =>
      Object.defineProperty({}, 'then', {
        get() {
          throw new Error('the then getter broke')
        },
      }),
    'garbage',
  ],
  ['a promise that never settles', () => new Promise(() => {}), 'garbage'],
  ['admitted, waitMs -0', () => ({ admitted: true, waitMs: -0 }), 'runs'],
  ['admitted, waitMs = maxWaitMs', () => ({ admitted: true, waitMs: MAX_WAIT_MS }), 'runs'],
]

/** Each answer, given at once and as a resolved promise (the never-settling one only as itself). */
const CASES = ANSWERS.flatMap(([name, answer, verdict]) => {
  const sync: [string, Verdict, RateLimitStore] = [name, verdict, { acquire: () => answer() as never }]
  if (name.startsWith('a promise') || name.startsWith('a then')) return [sync]
  const async: [string, Verdict, RateLimitStore] = [`${name}, async`, verdict, { acquire: async () => answer() as never }]
  return [sync, async]
})

function toolStack(store: RateLimitStore, onStoreFailure: 'open' | 'closed') {
  const clock = manualClock()
  const ranAt: number[] = []
  const search = defineTool({
    name: 'search',
    description: 'Search',
    input: z.object({ q: z.string() }),
    effect: 'read',
    execute: () => {
      ranAt.push(clock.now())
      return 'found'
    },
  })
  const stack = createStack({ tools: [search], clock, middleware: [rateLimit({ ...RULE, store, onStoreFailure })] })
  return { clock, ranAt, call: () => stack.dispatch({ id: 'c1', name: 'search', args: { q: 'x' } }) }
}

/** Settles `pending` by advancing the clock no further than the longest a call may be held: the store's time plus maxWaitMs. */
async function withinBound<T>(clock: ReturnType<typeof manualClock>, pending: Promise<T>): Promise<T> {
  let settled = false
  pending.then(
    () => (settled = true),
    () => (settled = true),
  )
  await clock.advance(STORE_TIMEOUT_MS + MAX_WAIT_MS)
  expect(settled, 'the call still waits past storeTimeoutMs + maxWaitMs').toBe(true)
  expect(clock.pending).toBe(0)
  return pending
}

describe('rateLimit: every wait a store proposes is checked against maxWaitMs before anyone sleeps on it', () => {
  for (const onStoreFailure of ['open', 'closed'] as const) {
    it.each(CASES)(`tool call, onStoreFailure ${onStoreFailure}: a store answering %s → %s`, async (_, verdict, store) => {
      const { clock, ranAt, call } = toolStack(store, onStoreFailure)
      const result: ToolResult = await withinBound(clock, call())
      if (verdict === 'runs') {
        expect(result.ok).toBe(true)
        expect(ranAt.every((t) => t <= MAX_WAIT_MS)).toBe(true)
      } else if (verdict === 'refused') {
        expect(result.error).toMatchObject({ code: 'rate_limited', retryable: false, safeToRepeat: true })
        // Clamped to the longest wait the rule allows: a clock gone wrong never tells the model to come back in 31 years.
        expect(result.error?.retryAfterMs).toBeLessThanOrEqual(MAX_WAIT_MS + 1_000)
        expect(ranAt).toEqual([])
      } else if (onStoreFailure === 'open') {
        expect(result.ok).toBe(true)
        expect(result.trace.map((e) => e.type)).toEqual(['rate-limit.store_failed'])
        expect(ranAt).toHaveLength(1)
        expect(ranAt[0]).toBeLessThanOrEqual(STORE_TIMEOUT_MS)
      } else {
        expect(result.error).toMatchObject({ code: 'store_unavailable', safeToRepeat: true })
        expect(ranAt).toEqual([])
      }
    })
  }

  for (const onStoreFailure of ['open', 'closed'] as const) {
    it.each(CASES)(`model call, onStoreFailure ${onStoreFailure}: a store answering %s → %s`, async (_, verdict, store) => {
      const clock = manualClock()
      const askedAt: number[] = []
      const model: ModelAdapter = {
        name: 'gpt',
        async generate() {
          askedAt.push(clock.now())
          return { text: 'done', toolCalls: [] }
        },
      }
      const agent = createAgent({ model, tools: [], clock, modelMiddleware: [rateLimit({ ...RULE, store, onStoreFailure })] })
      const outcome = await withinBound(clock, agent.run({ input: 'go' }))
      const stopped = outcome.status === 'stopped' ? outcome.error : undefined
      if (verdict === 'runs' || (verdict === 'garbage' && onStoreFailure === 'open')) {
        expect(outcome.status).toBe('completed')
        expect(askedAt.every((t) => t <= MAX_WAIT_MS)).toBe(true)
      } else {
        expect(stopped?.cause).toMatchObject({ code: verdict === 'refused' ? 'rate_limited' : 'store_unavailable' })
        expect(askedAt).toEqual([])
      }
    })
  }

  it('gives back the place a store reserved for a wait past maxWaitMs, and logs what the store proposed', async () => {
    const refunded: unknown[] = []
    const store: RateLimitStore = {
      acquire: () => ({ admitted: true, waitMs: 5_000, reservation: { tat: 6_000, seq: 2 } }),
      refund: (_key, _rule, reservation) => {
        refunded.push(reservation)
        return true
      },
    }
    const { clock, call } = toolStack(store, 'open')
    const result = await withinBound(clock, call())
    expect(result.error?.code).toBe('rate_limited')
    expect(refunded).toEqual([{ tat: 6_000, seq: 2 }])
  })
})
