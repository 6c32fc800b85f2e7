import assert from 'node:assert/strict'
import { type Contract, LEASE, type RawRecord, TTL, type WriteRaw } from './contract-parts.js'
import { corruptRecordCases } from './corrupt-record-cases.js'
import type { Awaitable, IdempotencyStore } from './idempotency-store.js'
import { protoKeyCases } from './proto-key-cases.js'
import { reclaimCases } from './reclaim-cases.js'

export type { RawRecord } from './contract-parts.js'

export { corruptRecords } from './corrupt-record-cases.js'

/** One behaviour every {@link IdempotencyStore} must show; `run` throws an assertion error when it does not. */
export interface StoreContractCase {
  readonly name: string
  run(): Promise<void>
}

/** A store under test with the contract's hook to plant a raw, possibly corrupt record. */
export interface StoreUnderTest {
  readonly store: IdempotencyStore
  /** Replaces whatever is stored under `key` (a store key, as `begin` receives it) with `record`. */
  writeRaw(key: string, record: RawRecord): Awaitable<void>
}

/**
 * Builds a fresh, empty store whose time is `now()` (milliseconds, controlled by the contract).
 * Return `{ store, writeRaw }` so the corrupt-record cases can plant raw records; a bare store fails them.
 */
export type StoreFactory = (now: () => number) => IdempotencyStore | StoreUnderTest | Promise<IdempotencyStore | StoreUnderTest>

/** Options of {@link idempotencyStoreContract}. */
export interface StoreContractOptions {
  /**
   * `false` leaves out the cases of the optional `reclaim` (a store without it keeps refusing identical
   * calls after an unknown outcome). Default `true`: the store must have it.
   */
  readonly reclaim?: boolean
}

/**
 * The protocol every idempotency store must keep, as test cases for any runner. The contract
 * moves time itself through the `now` it hands the factory, so no case ever sleeps. The factory
 * returns the store and a `writeRaw` hook that plants raw records for the corrupt-record cases.
 * The cases of the optional `reclaim` run unless `options.reclaim` is `false`.
 *
 * @example
 * const cases = idempotencyStoreContract((now) => {
 *   const store = sqliteStore({ path: ':memory:', now })
 *   return { store, writeRaw: (key, record) => insertRowAsIs(store.database, key, record) }
 * })
 * for (const c of cases) it(c.name, () => c.run())
 */
export function idempotencyStoreContract(create: StoreFactory, options: StoreContractOptions = {}): StoreContractCase[] {
  const cases: StoreContractCase[] = []
  const contract: Contract = (name, body) => {
    cases.push({
      name,
      async run() {
        const clock = { t: 1_700_000_000_000 }
        const made = await create(() => clock.t)
        const underTest = 'store' in made && 'writeRaw' in made ? made : undefined
        const writeRaw: WriteRaw =
          underTest === undefined
            ? () => assert.fail('the store test gives the contract no writeRaw hook: return { store, writeRaw } from the factory')
            : (key, record) => underTest.writeRaw(key, record)
        await body(underTest?.store ?? (made as IdempotencyStore), clock, writeRaw)
      },
    })
  }
  const claim = async (store: IdempotencyStore, key: string, hash = 'h1'): Promise<string> => {
    const begun = await store.begin(key, hash, LEASE, TTL)
    assert.equal(begun.status, 'new')
    return (begun as { token: string }).token
  }

  contract('begin on a fresh key hands out a token', async (store) => {
    const begun = await store.begin('s k1', 'h1', LEASE, TTL)
    assert.equal(begun.status, 'new')
    assert.equal(typeof (begun as { token: unknown }).token, 'string')
  })

  contract('begin while a live lease is held answers in_flight', async (store, clock) => {
    await claim(store, 's k1')
    clock.t += LEASE - 1
    assert.deepEqual(await store.begin('s k1', 'h1', LEASE, TTL), { status: 'in_flight' })
  })

  contract('a completed key answers done with an equal copy of the stored result', async (store) => {
    const token = await claim(store, 's k1')
    const result = { value: { id: 'ch_1', amounts: [1, 2.5], nested: { ok: true, none: null } } }
    assert.equal(await store.complete('s k1', token, result, TTL), true)
    result.value.amounts.push(3)
    const again = await store.begin('s k1', 'h1', LEASE, TTL)
    assert.deepEqual(again, { status: 'done', result: { value: { id: 'ch_1', amounts: [1, 2.5], nested: { ok: true, none: null } } } })
  })

  contract('a result without a value round-trips as an empty result', async (store) => {
    const token = await claim(store, 's k1')
    assert.equal(await store.complete('s k1', token, {}, TTL), true)
    assert.deepEqual(await store.begin('s k1', 'h1', LEASE, TTL), { status: 'done', result: {} })
  })

  contract('the same key with another arguments hash is a mismatch, pending or done', async (store) => {
    const token = await claim(store, 's k1')
    assert.deepEqual(await store.begin('s k1', 'h2', LEASE, TTL), { status: 'mismatch' })
    await store.complete('s k1', token, { value: 1 }, TTL)
    assert.deepEqual(await store.begin('s k1', 'h2', LEASE, TTL), { status: 'mismatch' })
  })

  contract('release frees the key and the next begin gets a different token', async (store) => {
    const first = await claim(store, 's k1')
    assert.equal(await store.release('s k1', first), true)
    const second = await claim(store, 's k1')
    assert.notEqual(second, first)
  })

  contract('a stale token can neither complete, release nor mark unknown', async (store) => {
    const stale = await claim(store, 's k1')
    await store.release('s k1', stale)
    const current = await claim(store, 's k1')
    assert.equal(await store.complete('s k1', stale, { value: 'stale' }, TTL), false)
    assert.equal(await store.release('s k1', stale), false)
    assert.equal(await store.markUnknown('s k1', stale, TTL), false)
    assert.deepEqual(await store.begin('s k1', 'h1', LEASE, TTL), { status: 'in_flight' })
    assert.equal(await store.complete('s k1', current, { value: 'current' }, TTL), true)
    assert.deepEqual(await store.begin('s k1', 'h1', LEASE, TTL), { status: 'done', result: { value: 'current' } })
  })

  contract('a settled record cannot be settled again', async (store) => {
    const token = await claim(store, 's k1')
    assert.equal(await store.complete('s k1', token, { value: 1 }, TTL), true)
    assert.equal(await store.complete('s k1', token, { value: 2 }, TTL), false)
    assert.equal(await store.release('s k1', token), false)
    assert.equal(await store.markUnknown('s k1', token, TTL), false)
    assert.deepEqual(await store.begin('s k1', 'h1', LEASE, TTL), { status: 'done', result: { value: 1 } })
  })

  contract('a key marked unknown answers unknown (recorded) until its TTL ends', async (store, clock) => {
    const token = await claim(store, 's k1')
    assert.equal(await store.markUnknown('s k1', token, TTL), true)
    assert.deepEqual(await store.begin('s k1', 'h1', LEASE, TTL), { status: 'unknown', reason: 'recorded' })
    clock.t += TTL - 1
    assert.deepEqual(await store.begin('s k1', 'h1', LEASE, TTL), { status: 'unknown', reason: 'recorded' })
    clock.t += 1
    assert.equal((await store.begin('s k1', 'h1', LEASE, TTL)).status, 'new')
  })

  contract('an expired lease answers unknown (lease_expired) for a full TTL', async (store, clock) => {
    await claim(store, 's k1')
    clock.t += LEASE
    assert.deepEqual(await store.begin('s k1', 'h1', LEASE, TTL), { status: 'unknown', reason: 'lease_expired' })
    clock.t += TTL - 1
    assert.deepEqual(await store.begin('s k1', 'h1', LEASE, TTL), { status: 'unknown', reason: 'lease_expired' })
    clock.t += 1
    assert.equal((await store.begin('s k1', 'h1', LEASE, TTL)).status, 'new')
  })

  contract('the owner may still complete after its lease expired, since nobody else can take the key', async (store, clock) => {
    const token = await claim(store, 's k1')
    clock.t += LEASE + 5
    assert.equal(await store.complete('s k1', token, { value: 'late' }, TTL), true)
    assert.deepEqual(await store.begin('s k1', 'h1', LEASE, TTL), { status: 'done', result: { value: 'late' } })
  })

  contract('a done record replays until just before its TTL and is gone at it', async (store, clock) => {
    const token = await claim(store, 's k1')
    await store.complete('s k1', token, { value: 7 }, TTL)
    clock.t += TTL - 1
    assert.deepEqual(await store.begin('s k1', 'h1', LEASE, TTL), { status: 'done', result: { value: 7 } })
    clock.t += 1
    assert.equal((await store.begin('s k1', 'h1', LEASE, TTL)).status, 'new')
  })

  contract('an expired record cannot be settled by its old token', async (store, clock) => {
    const token = await claim(store, 's k1')
    clock.t += LEASE + TTL
    assert.equal(await store.complete('s k1', token, { value: 1 }, TTL), false)
    assert.equal(await store.release('s k1', token), false)
  })

  contract('keys are exact: case, spaces and punctuation all matter', async (store) => {
    const keys = ['s k', 's K', 's k ', 'S k', 's k"\'', 's k\\']
    for (const key of keys) await claim(store, key)
  })

  contract('of 50 concurrent begins on one key exactly one gets a token', async (store) => {
    const answers = await Promise.all(Array.from({ length: 50 }, () => store.begin('s k1', 'h1', LEASE, TTL)))
    assert.equal(answers.filter((a) => a.status === 'new').length, 1)
    assert.equal(answers.filter((a) => a.status === 'in_flight').length, 49)
  })

  protoKeyCases(contract, claim)
  corruptRecordCases(contract, claim)
  if (options.reclaim !== false) reclaimCases(contract, claim)
  return cases
}
