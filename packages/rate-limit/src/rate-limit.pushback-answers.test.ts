// Every answer a pushback store could give, against the model side of a layer that trusts it for at most
// storeTimeoutMs: garbage (not a finite wait of 0 to MAX_PUSHBACK_MS) or silence is a failed store, which
// onStoreFailure answers ('open' sends, 'closed' refuses), and a hold that fails never changes the call's
// own failure. On a manual clock: a silent store is given exactly storeTimeoutMs.
import { createAgent, type RunOutcome } from '@shallot/agent'
import { type ModelAdapter, ToolError } from '@shallot/core'
import { type ManualClock, manualClock } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { MAX_PUSHBACK_MS, type PushbackStore, rateLimit } from './index.js'

const STORE_TIMEOUT_MS = 50

type Verdict = 'free' | 'held' | 'garbage'

const throwingThen = () =>
  Object.defineProperty({}, 'then', {
    get() {
      throw new Error('the then getter broke')
    },
  })

const ANSWERS: Array<[string, () => unknown, Verdict]> = [
  ['NaN', () => Number.NaN, 'garbage'],
  ['Infinity', () => Number.POSITIVE_INFINITY, 'garbage'],
  ['-Infinity', () => Number.NEGATIVE_INFINITY, 'garbage'],
  ['1e15', () => 1e15, 'garbage'],
  ['MAX_PUSHBACK_MS + 1', () => MAX_PUSHBACK_MS + 1, 'garbage'],
  ['-1', () => -1, 'garbage'],
  ['"5000"', () => '5000', 'garbage'],
  ['null', () => null, 'garbage'],
  ['undefined', () => undefined, 'garbage'],
  ['an object', () => ({ ms: 5000 }), 'garbage'],
  ['a then getter that throws', throwingThen, 'garbage'],
  ['a promise that never settles', () => new Promise(() => {}), 'garbage'],
  ['0', () => 0, 'free'],
  ['-0', () => -0, 'free'],
  ['MAX_PUSHBACK_MS', () => MAX_PUSHBACK_MS, 'held'],
]

/** Each answer given at once, as a resolved promise, and as a throw / rejection where that makes sense. */
const CASES: Array<[string, Verdict, PushbackStore['heldFor']]> = [
  ...ANSWERS.flatMap(([name, answer, verdict]): Array<[string, Verdict, PushbackStore['heldFor']]> => {
    const sync: [string, Verdict, PushbackStore['heldFor']] = [name, verdict, () => answer() as number]
    if (name.startsWith('a promise') || name.startsWith('a then')) return [sync]
    return [sync, [`${name}, async`, verdict, async () => answer() as number]]
  }),
  [
    'a throw',
    'garbage',
    () => {
      throw new Error('ECONNRESET')
    },
  ],
  ['a rejection', 'garbage', () => Promise.reject(new Error('ECONNREFUSED'))],
]

function agentOn(clock: ManualClock, store: PushbackStore, onStoreFailure: 'open' | 'closed', failure?: unknown) {
  const askedAt: number[] = []
  const model: ModelAdapter = {
    name: 'gpt',
    async generate() {
      askedAt.push(clock.now())
      if (failure !== undefined) throw failure
      return { text: 'done', toolCalls: [] }
    },
  }
  const layer = rateLimit({ limit: 1000, maxWaitMs: 1000, pushback: store, onStoreFailure, storeTimeoutMs: STORE_TIMEOUT_MS })
  const agent = createAgent({ model, tools: [], clock, modelMiddleware: [layer] })
  return { askedAt, run: () => agent.run({ input: 'go' }) }
}

/** Settles `pending`, moving the clock no further than the store's timeout. */
async function withinStoreTimeout<T>(clock: ManualClock, pending: Promise<T>): Promise<T> {
  let settled = false
  pending.then(
    () => (settled = true),
    () => (settled = true),
  )
  for (let i = 0; i < 20 && !settled; i++) await new Promise((resolve) => setImmediate(resolve))
  if (!settled) await clock.advance(STORE_TIMEOUT_MS)
  return pending
}

const stopOf = (outcome: RunOutcome) => (outcome.status === 'stopped' ? outcome.error : undefined)

describe('the pushback store’s answer to heldFor', () => {
  it.each(CASES)('%s: %s', async (_name, verdict, heldFor) => {
    for (const mode of ['open', 'closed'] as const) {
      const clock = manualClock()
      const { askedAt, run } = agentOn(clock, { hold() {}, heldFor }, mode)
      const outcome = await withinStoreTimeout(clock, run())
      expect(clock.now()).toBeLessThanOrEqual(STORE_TIMEOUT_MS)
      expect(clock.pending).toBe(0)
      if (verdict === 'free' || (verdict === 'garbage' && mode === 'open')) {
        expect(outcome.status).toBe('completed')
        expect(askedAt).toEqual([clock.now()])
      } else if (verdict === 'held') {
        expect(stopOf(outcome)?.cause).toMatchObject({ code: 'rate_limited', details: { pushback: true } })
        expect(askedAt).toEqual([])
      } else {
        expect(stopOf(outcome)?.cause).toMatchObject({ code: 'store_unavailable' })
        expect(askedAt).toEqual([])
      }
    }
  })
})

describe('a pushback store that fails to hold', () => {
  const pushedBack = new ToolError('rate_limited', 'rate limited by the provider (429)', {
    category: 'transient',
    retryable: true,
    retryAfterMs: 30_000,
    details: { status: 429 },
  })

  it.each([
    [
      'throws',
      () => {
        throw new Error('READONLY')
      },
    ],
    ['rejects', () => Promise.reject(new Error('READONLY'))],
    ['never settles', () => new Promise<void>(() => {})],
    ['answers a then getter that throws', throwingThen as () => void],
  ])('%s: the call’s own failure goes on as it came, within storeTimeoutMs', async (_name, hold) => {
    const clock = manualClock()
    const { run } = agentOn(clock, { hold, heldFor: () => 0 }, 'closed', pushedBack)
    const stopped = stopOf(await withinStoreTimeout(clock, run()))
    expect(stopped?.kind).toBe('model_failed')
    expect(stopped?.cause).toBe(pushedBack)
    expect(clock.now()).toBeLessThanOrEqual(STORE_TIMEOUT_MS)
    expect(clock.pending).toBe(0)
  })
})
