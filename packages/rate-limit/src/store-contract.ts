import assert from 'node:assert/strict'
import type { RateDecision, RateRule } from './gcra.js'
import type { RateLimitStore } from './rate-limit-store.js'

/** A time the contract moves by hand (epoch ms): a shared store under test reads it instead of its server's clock. */
export interface ContractClock {
  now(): number
}

/** Makes a fresh, empty store on `clock` (keys of one store never meet another's). */
export type RateLimitStoreFactory = (clock: ContractClock) => RateLimitStore | Promise<RateLimitStore>

/** One case of the contract: register it with your test runner (`it(c.name, c.run)`). */
export interface RateLimitStoreCase {
  readonly name: string
  run(): Promise<void>
}

const START = 1_700_000_000_000

/**
 * The behaviour every {@link RateLimitStore} keeps, as cases to register with any test runner: the
 * burst, reservations up to `maxWaitMs`, refusals that take nothing, time freeing places, keys kept apart
 * (`__proto__`, braces, spaces included), and 50 concurrent acquires admitting exactly what one at a
 * time would (the operation is atomic). The memory, Redis and PostgreSQL stores run it.
 *
 * @example
 * for (const c of rateLimitStoreContract((clock) => memoryRateLimitStore())) it(c.name, () => c.run())
 */
export function rateLimitStoreContract(create: RateLimitStoreFactory): RateLimitStoreCase[] {
  async function fresh() {
    let now = START
    const clock = { now: () => now }
    const store = await create(clock)
    const acquire = async (key: string, rule: RateRule): Promise<RateDecision> => {
      const d = await store.acquire(key, rule, now - START)
      return { admitted: d.admitted, waitMs: Math.round(d.waitMs * 1000) / 1000 }
    }
    return { acquire, advance: (ms: number) => void (now += ms) }
  }
  const cases: RateLimitStoreCase[] = []
  const add = (name: string, run: () => Promise<void>) => cases.push({ name, run })

  add('admits the burst at once, reserves places up to maxWaitMs ahead, then refuses without taking anything', async () => {
    const { acquire } = await fresh()
    const rule = { intervalMs: 100, burst: 2, maxWaitMs: 250 }
    const answers = []
    for (let i = 0; i < 6; i++) answers.push(await acquire('k', rule))
    assert.deepEqual(answers, [
      { admitted: true, waitMs: 0 },
      { admitted: true, waitMs: 0 },
      { admitted: true, waitMs: 100 },
      { admitted: true, waitMs: 200 },
      { admitted: false, waitMs: 300 },
      { admitted: false, waitMs: 300 },
    ])
  })

  add('frees one place per interval as time passes, and a key long at rest is a fresh key', async () => {
    const { acquire, advance } = await fresh()
    const rule = { intervalMs: 1000, burst: 1, maxWaitMs: 0 }
    assert.deepEqual(await acquire('k', rule), { admitted: true, waitMs: 0 })
    advance(400)
    assert.deepEqual(await acquire('k', rule), { admitted: false, waitMs: 600 })
    advance(600)
    assert.deepEqual(await acquire('k', rule), { admitted: true, waitMs: 0 })
    advance(3_600_000)
    assert.deepEqual(await acquire('k', { ...rule, burst: 3 }), { admitted: true, waitMs: 0 })
    assert.deepEqual(await acquire('k', { ...rule, burst: 3 }), { admitted: true, waitMs: 0 })
  })

  add('keeps keys apart, __proto__, braces, spaces and non-ASCII included', async () => {
    const { acquire } = await fresh()
    const rule = { intervalMs: 1000, burst: 1, maxWaitMs: 0 }
    const keys = ['__proto__', 'constructor', 'a{b}', 'a%7bb%7d', 'tenant a', 'tenant:a', 'tënant', '']
    for (const key of keys)
      assert.deepEqual(await acquire(key, rule), { admitted: true, waitMs: 0 }, `first call of ${JSON.stringify(key)}`)
    for (const key of keys) assert.equal((await acquire(key, rule)).admitted, false, `second call of ${JSON.stringify(key)}`)
  })

  add('admits exactly burst + maxWaitMs / interval of 50 concurrent calls (atomic)', async () => {
    const { acquire } = await fresh()
    const rule = { intervalMs: 50, burst: 5, maxWaitMs: 500 }
    const answers = await Promise.all(Array.from({ length: 50 }, () => acquire('burst', rule)))
    const admitted = answers.filter((a) => a.admitted)
    assert.equal(admitted.length, 5 + 10)
    const waits = admitted.map((a) => a.waitMs).sort((x, y) => x - y)
    assert.deepEqual(waits, [0, 0, 0, 0, 0, 50, 100, 150, 200, 250, 300, 350, 400, 450, 500])
    for (const refused of answers.filter((a) => !a.admitted)) assert.equal(refused.waitMs, 550)
  })

  add('holds a fractional interval (3 calls per second) exactly over 30 s', async () => {
    const { acquire, advance } = await fresh()
    const rule = { intervalMs: 1000 / 3, burst: 1, maxWaitMs: 0 }
    let admitted = 0
    // Each refusal says how long until the next place: moving exactly that far admits at the limit's own pace.
    for (let t = 0; t < 30_000; ) {
      const d = await acquire('thirds', rule)
      if (d.admitted) admitted++
      const step = d.admitted ? 0 : Math.max(d.waitMs, 0.001)
      advance(step)
      t += step
    }
    assert.ok(admitted >= 90 && admitted <= 91, `admitted ${admitted} of a limit of 90`)
  })

  return cases
}
