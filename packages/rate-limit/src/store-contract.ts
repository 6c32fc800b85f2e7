import assert from 'node:assert/strict'
import type { RateDecision, RateReservation, RateRule } from './gcra.js'
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
 * time would (the operation is atomic); and `refund`, when the store has it: a key's last reservation
 * given back once, before it came due, never handing a place out twice under concurrent acquires (a
 * store without `refund` must answer no reservation). The memory, Redis and PostgreSQL stores run it.
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
    const reserve = async (key: string, rule: RateRule): Promise<RateDecision> => store.acquire(key, rule, now - START)
    const refund = async (key: string, rule: RateRule, reservation: RateReservation | undefined): Promise<boolean> => {
      assert.ok(reservation !== undefined, 'an admitted answer with a wait carries its reservation when the store has refund()')
      return (await store.refund?.(key, rule, reservation, now - START)) === true
    }
    return { acquire, reserve, refund, canRefund: typeof store.refund === 'function', advance: (ms: number) => void (now += ms) }
  }
  const waitOf = (d: RateDecision) => Math.round(d.waitMs * 1000) / 1000
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

  addRefundCases(add, fresh, waitOf)
  return cases
}

type Fresh = () => Promise<{
  acquire(key: string, rule: RateRule): Promise<RateDecision>
  reserve(key: string, rule: RateRule): Promise<RateDecision>
  refund(key: string, rule: RateRule, reservation: RateReservation | undefined): Promise<boolean>
  readonly canRefund: boolean
  advance(ms: number): void
}>

/**
 * The refund cases: a store without `refund` must answer no reservation (and keeps every place, as
 * before refund existed); one with it gives back exactly a key's last reservation, once, before it
 * came due, atomically against concurrent acquires.
 */
function addRefundCases(add: (name: string, run: () => Promise<void>) => void, fresh: Fresh, waitOf: (d: RateDecision) => number): void {
  const rule = { intervalMs: 100, burst: 1, maxWaitMs: 5000 }
  const refundCase = (name: string, run: (s: Awaited<ReturnType<Fresh>>) => Promise<void>) =>
    add(`refund: ${name}`, async () => {
      const s = await fresh()
      if (s.canRefund) return run(s)
      await s.reserve('k', rule)
      assert.equal((await s.reserve('k', rule)).reservation, undefined, 'a store without refund() answers no reservation')
    })

  refundCase('a reservation given back before it came due frees its place for the next call', async (s) => {
    assert.equal((await s.reserve('k', rule)).reservation, undefined, 'a call admitted at once holds no reservation')
    const waiting = await s.reserve('k', rule)
    assert.equal(waitOf(waiting), 100)
    assert.equal(await s.refund('k', rule, waiting.reservation), true)
    assert.equal(waitOf(await s.reserve('k', rule)), 100)
  })

  refundCase('gives a place back once: a second refund, or one after a refund-then-admit, changes nothing', async (s) => {
    await s.reserve('k', rule)
    const b = await s.reserve('k', rule)
    assert.equal(await s.refund('k', rule, b.reservation), true)
    assert.equal(await s.refund('k', rule, b.reservation), false, 'second refund')
    const c = await s.reserve('k', rule)
    assert.equal(waitOf(c), 100)
    assert.equal(await s.refund('k', rule, b.reservation), false, 'refund of b after c took the same place')
    assert.equal(waitOf(await s.reserve('k', rule)), 200)
  })

  refundCase('a reservation that came due, or one with a call admitted behind it, gives nothing back', async (s) => {
    await s.reserve('k', rule)
    const b = await s.reserve('k', rule)
    const c = await s.reserve('k', rule)
    assert.equal(await s.refund('k', rule, b.reservation), false, 'b is in the middle of the queue')
    s.advance(200)
    assert.equal(await s.refund('k', rule, c.reservation), false, 'c came due')
    assert.equal(waitOf(await s.reserve('k', rule)), 100)
  })

  refundCase('a queue given back from its tail comes back whole, one interval per place', async (s) => {
    await s.reserve('k', rule)
    const queue = []
    for (let i = 0; i < 5; i++) queue.push(await s.reserve('k', rule))
    for (const d of queue.reverse()) assert.equal(await s.refund('k', rule, d.reservation), true)
    assert.equal(waitOf(await s.reserve('k', rule)), 100)
    assert.equal(await s.refund('other', rule, queue[0]?.reservation), false, 'another key')
  })

  refundCase('50 refunds racing 50 acquires never hand one place out twice (atomic)', async (s) => {
    await s.reserve('k', rule)
    const queue = []
    for (let i = 0; i < 50; i++) queue.push(await s.reserve('k', rule))
    const order = queue.map((d, i) => ({ d, i })).sort((x, y) => ((x.i * 37) % 50) - ((y.i * 37) % 50))
    const [refunds, admitted] = await Promise.all([
      Promise.all(order.map(async ({ d }) => ({ d, back: await s.refund('k', rule, d.reservation) }))),
      Promise.all(Array.from({ length: 50 }, () => s.reserve('k', rule))),
    ])
    const held = [...refunds.filter((r) => !r.back).map((r) => r.d), ...admitted.filter((d) => d.admitted)]
    const waits = held.map(waitOf).sort((x, y) => x - y)
    for (let i = 1; i < waits.length; i++) {
      assert.ok((waits[i] as number) - (waits[i - 1] as number) >= 99.999, `two calls hold places ${waits[i - 1]} and ${waits[i]} ms away`)
    }
    assert.ok(held.length >= 50, `only ${held.length} places held: a refund or an acquire was lost`)
  })
}

export { type PushbackStoreCase, type PushbackStoreFactory, pushbackStoreContract } from './pushback-store-contract.js'
