import assert from 'node:assert/strict'
import { type Contract, LEASE, type RawRecord, TTL, type WriteRaw } from './contract-parts.js'
import { corruptRecordCases } from './corrupt-record-cases.js'
import type { Awaitable, IdempotencyStore } from './idempotency-store.js'
import { claimCases, expiryCases } from './lifecycle-cases.js'
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

  claimCases(contract, claim)
  expiryCases(contract, claim)
  protoKeyCases(contract, claim)
  corruptRecordCases(contract, claim)
  if (options.reclaim !== false) reclaimCases(contract, claim)
  return cases
}
