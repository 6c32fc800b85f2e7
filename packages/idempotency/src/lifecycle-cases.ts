import assert from 'node:assert/strict'
import { type Contract, LEASE, TTL } from './contract-parts.js'
import type { IdempotencyStore } from './idempotency-store.js'

/** Claims a fresh key and returns its token; fails the case when `begin` answers anything else. */
type Claim = (store: IdempotencyStore, key: string, hash?: string) => Promise<string>

/**
 * The store contract's cases of one record's life while it lives: claim, replay, mismatch, release,
 * and the fencing of stale tokens and settled records.
 *
 * @example
 * claimCases(contract, claim) // called by idempotencyStoreContract()
 */
export function claimCases(contract: Contract, claim: Claim): void {
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
}

/**
 * The store contract's cases of time and of many callers: unknown outcomes, expired leases and TTLs,
 * exact keys, and 50 concurrent begins.
 *
 * @example
 * expiryCases(contract, claim) // called by idempotencyStoreContract()
 */
export function expiryCases(contract: Contract, claim: Claim): void {
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
}
