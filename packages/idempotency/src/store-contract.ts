import assert from 'node:assert/strict'
import { createStack, defineTool } from '@shallot/core'
import { z } from 'zod'
import { idempotency } from './idempotency.js'
import { argsHashOf, storeKeyOf } from './idempotency-key.js'
import type { Awaitable, BeginResult, IdempotencyStore } from './idempotency-store.js'

/** One behaviour every {@link IdempotencyStore} must show; `run` throws an assertion error when it does not. */
export interface StoreContractCase {
  readonly name: string
  run(): Promise<void>
}

/**
 * One record as the contract plants it, in the contract's terms; a store's `writeRaw` maps each
 * field to its own storage **without validating anything**: the point is to plant what a bug, a
 * bad migration or another writer could leave behind. A field left out is absent (SQL `NULL`, a
 * missing hash field). Strings are written as they are; numbers as numbers, or as `String(n)`
 * where the storage (or the column) cannot hold that number (`NaN` becomes `'NaN'`); other values
 * as their `String()`.
 */
export interface RawRecord {
  /** The arguments hash `begin` was given. */
  readonly argsHash?: unknown
  /** `'pending'`, `'done'` or `'unknown'` when well-formed; map these names to your own codes. */
  readonly state?: unknown
  /** The fencing token `begin` handed out. */
  readonly token?: unknown
  /** End of the lease, in milliseconds on the store's clock (the `now` the factory got). */
  readonly leaseUntil?: unknown
  /** When the record expires, same clock. */
  readonly expiresAt?: unknown
  /** A done record's stored result, as JSON text (`{"value":…}`). */
  readonly result?: unknown
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

const LEASE = 1_000
const TTL = 60_000

/**
 * The protocol every idempotency store must keep, as test cases for any runner. The contract
 * moves time itself through the `now` it hands the factory, so no case ever sleeps.
 *
 * @example
 * for (const c of idempotencyStoreContract((now) => memoryStore({ now }))) it(c.name, () => c.run())
 */
export function idempotencyStoreContract(create: StoreFactory): StoreContractCase[] {
  const cases: StoreContractCase[] = []
  const contract = (name: string, body: (store: IdempotencyStore, clock: { t: number }, writeRaw: WriteRaw) => Promise<void>) => {
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

  corruptCases(contract, claim)
  return cases
}

type WriteRaw = (key: string, record: RawRecord) => Awaitable<void>
type Contract = (name: string, body: (store: IdempotencyStore, clock: { t: number }, writeRaw: WriteRaw) => Promise<void>) => void

const DEEP = 100_000
const HUGE_VALUE = 'x'.repeat(2 * 1024 * 1024)

/**
 * Records that are not well-formed, as fields that replace those of a well-formed done record.
 * `undefined` leaves the field out.
 */
export const corruptRecords: Readonly<Record<string, RawRecord>> = {
  'a result that is a JSON string': { result: '"charged"' },
  'a result that is JSON null': { result: 'null' },
  'a result that is a number': { result: '42' },
  'a result that is an array': { result: '[]' },
  'a result that is a boolean': { result: 'true' },
  'a result that is an object of the wrong shape': { result: '{"x":1}' },
  'a result that is truncated JSON': { result: '{"value":{"chargeId":"ch_' },
  'a result that is not JSON': { result: 'charged' },
  'a result that is empty text': { result: '' },
  'a result with a __proto__ key': { result: '{"__proto__":{"value":"ch_1"}}' },
  'a result whose value holds a __proto__ key': { result: '{"value":{"__proto__":{"admin":true}}}' },
  'a result nested 100,000 levels deep': { result: `{"value":${'['.repeat(DEEP)}${']'.repeat(DEEP)}}` },
  'a done record without a result': { result: undefined },
  'a status of 42': { state: 42 },
  'a status nobody writes': { state: 'finished' },
  'a fencing token that is NaN': { token: Number.NaN },
  'a lease end that is NaN': { state: 'pending', leaseUntil: Number.NaN, result: undefined },
  'an expiry that is not a number': { expiresAt: 'tomorrow' },
  'an empty arguments hash': { argsHash: '' },
}

function corruptCases(contract: Contract, claim: (store: IdempotencyStore, key: string) => Promise<string>): void {
  /** A well-formed done record of `key` with `fields` replaced, its token a real one of this store. */
  const plant = async (store: IdempotencyStore, clock: { t: number }, writeRaw: WriteRaw, key: string, fields: RawRecord) => {
    const token = await claim(store, key)
    const record: Record<string, unknown> = {
      argsHash: 'h1',
      state: 'done',
      token,
      leaseUntil: clock.t + LEASE,
      expiresAt: clock.t + LEASE + TTL,
      result: '{"value":"ch_1"}',
      ...fields,
    }
    for (const field of Object.keys(record)) if (record[field] === undefined) delete record[field]
    await writeRaw(key, record)
  }
  const assertCorrupt = (answer: BeginResult, what: string) => {
    assert.equal(answer.status, 'unknown', `${what}: expected status unknown, got ${JSON.stringify(answer).slice(0, 200)}`)
    assert.equal((answer as { reason: string }).reason, 'corrupt', `${what}: expected reason corrupt`)
    const problem = (answer as { problem?: unknown }).problem
    assert.ok(typeof problem === 'string' && problem.length > 0, `${what}: a corrupt answer names its problem`)
  }

  contract('the raw hook plants a well-formed record that begin reads back', async (store, clock, writeRaw) => {
    await plant(store, clock, writeRaw, 's k1', {})
    assert.deepEqual(await store.begin('s k1', 'h1', LEASE, TTL), { status: 'done', result: { value: 'ch_1' } })
  })

  for (const [name, fields] of Object.entries(corruptRecords)) {
    contract(`a record with ${name} answers unknown (corrupt), again and again, never new or done`, async (store, clock, writeRaw) => {
      await plant(store, clock, writeRaw, 's k1', fields)
      assertCorrupt(await store.begin('s k1', 'h1', LEASE, TTL), 'first begin')
      clock.t += LEASE
      assertCorrupt(await store.begin('s k1', 'h1', LEASE, TTL), 'begin after a lease')
    })
  }

  contract('a corrupt record whose expiry has passed is gone, like any expired record', async (store, clock, writeRaw) => {
    await plant(store, clock, writeRaw, 's k1', { state: 42 })
    clock.t += LEASE + TTL
    assert.equal((await store.begin('s k1', 'h1', LEASE, TTL)).status, 'new')
  })

  contract('a planted pending record whose lease ran out answers unknown (lease_expired), never new', async (store, clock, writeRaw) => {
    await plant(store, clock, writeRaw, 's k1', { state: 'pending', leaseUntil: clock.t - 1, result: undefined })
    assert.deepEqual(await store.begin('s k1', 'h1', LEASE, TTL), { status: 'unknown', reason: 'lease_expired' })
    clock.t += TTL - 1
    assert.deepEqual(await store.begin('s k1', 'h1', LEASE, TTL), { status: 'unknown', reason: 'lease_expired' })
  })

  contract('a huge well-formed result (2 MiB) replays whole', async (store, clock, writeRaw) => {
    await plant(store, clock, writeRaw, 's k1', { result: JSON.stringify({ value: { text: HUGE_VALUE } }) })
    const answer = await store.begin('s k1', 'h1', LEASE, TTL)
    assert.ok(answer.status === 'done', `expected done, got ${answer.status}`)
    assert.equal((answer.result.value as { text?: unknown } | undefined)?.text, HUGE_VALUE)
  })

  for (const [name, fields] of Object.entries(corruptRecords)) {
    contract(
      `through idempotency(): a record with ${name} refuses the call as outcome_unknown and the tool does not run`,
      async (inner, clock, writeRaw) => {
        let executions = 0
        const chargeCard = defineTool({
          name: 'charge_card',
          description: 'Charge a card',
          input: z.object({ amount: z.number() }),
          execute: () => ({ chargeId: `ch_${++executions}` }),
        })
        // The record to corrupt is the one the first call left, with the token it was handed.
        let token: string | undefined
        const store: IdempotencyStore = {
          begin: async (...args) => {
            const answer = await inner.begin(...args)
            if (answer.status === 'new') token = answer.token
            return answer
          },
          complete: (...args) => inner.complete(...args),
          release: (...args) => inner.release(...args),
          markUnknown: (...args) => inner.markUnknown(...args),
        }
        const stack = createStack({
          tools: [chargeCard],
          middleware: [idempotency({ store, key: () => 'order-1', leaseMs: LEASE, ttlMs: TTL })],
        })
        const call = { id: 'c1', name: 'charge_card', args: { amount: 5 } }
        assert.equal((await stack.dispatch(call)).ok, true)
        const record: Record<string, unknown> = {
          argsHash: argsHashOf('charge_card', { amount: 5 }),
          state: 'done',
          token,
          leaseUntil: clock.t,
          expiresAt: clock.t + TTL,
          result: '{"value":{"chargeId":"ch_1"}}',
          ...fields,
        }
        for (const field of Object.keys(record)) if (record[field] === undefined) delete record[field]
        await writeRaw(storeKeyOf('default', 'order-1'), record)
        for (const attempt of ['second', 'third']) {
          const refused = await stack.dispatch({ ...call, id: `c-${attempt}` })
          assert.equal(refused.ok, false, `the ${attempt} call must be refused, got ${refused.content.slice(0, 200)}`)
          assert.equal(refused.error?.code, 'outcome_unknown')
          assert.equal(refused.error?.safeToRepeat, false)
          const corrupt = refused.trace.find((event) => event.type === 'idempotency.corrupt')
          assert.equal(corrupt?.key, 'order-1', 'an idempotency.corrupt event names the key')
        }
        assert.equal(executions, 1, 'the tool ran only for the first call')
      },
    )
  }
}
