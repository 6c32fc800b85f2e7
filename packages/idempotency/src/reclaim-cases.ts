import assert from 'node:assert/strict'
import { type Contract, LEASE, type RawRecord, TTL } from './contract-parts.js'
import type { IdempotencyStore } from './idempotency-store.js'
import { reclaimOf, reclaimThroughLayerCases } from './reclaim-cases-layer.js'

type Claim = (store: IdempotencyStore, key: string) => Promise<string>

/** Claims `s k1` and records its outcome as unknown; the token it held. */
async function markedUnknown(claim: Claim, store: IdempotencyStore): Promise<string> {
  const token = await claim(store, 's k1')
  assert.equal(await store.markUnknown('s k1', token, TTL), true)
  return token
}

/**
 * The contract's cases for the optional `reclaim`: it takes over only a well-formed unknown outcome
 * of the same arguments, atomically, fencing out any earlier token; and through `idempotency()` a
 * later identical call reconciles the unknown outcome (also from a second process after a crash),
 * once for 50 parallel callers.
 *
 * @example
 * reclaimCases(contract, claim) // called by idempotencyStoreContract() unless { reclaim: false }
 */
export function reclaimCases(contract: Contract, claim: (store: IdempotencyStore, key: string) => Promise<string>): void {
  const unknownRecord = (store: IdempotencyStore) => markedUnknown(claim, store)

  contract('reclaim takes over a recorded unknown outcome: a new token, pending again, the old token fenced out', async (store) => {
    const old = await unknownRecord(store)
    const token = await reclaimOf(store)('s k1', 'h1', LEASE, TTL)
    assert.ok(typeof token === 'string' && token !== '' && token !== old, `reclaim hands out a new token, got ${String(token)}`)
    assert.deepEqual(await store.begin('s k1', 'h1', LEASE, TTL), { status: 'in_flight' })
    assert.equal(await store.complete('s k1', old, { value: 'stale' }, TTL), false)
    assert.equal(await store.complete('s k1', token, { value: 'ch_1' }, TTL), true)
    assert.deepEqual(await store.begin('s k1', 'h1', LEASE, TTL), { status: 'done', result: { value: 'ch_1' } })
  })

  contract('reclaim takes over a pending record whose lease ran out, and its old owner can no longer settle it', async (store, clock) => {
    const old = await claim(store, 's k1')
    clock.t += LEASE
    const token = await reclaimOf(store)('s k1', 'h1', LEASE, TTL)
    assert.ok(typeof token === 'string' && token !== old, 'reclaim hands out a new token')
    assert.equal(await store.complete('s k1', old, { value: 'late' }, TTL), false)
    assert.equal(await store.release('s k1', token), true)
    assert.equal((await store.begin('s k1', 'h1', LEASE, TTL)).status, 'new')
  })

  contract('reclaim leaves alone a fresh key, a live lease, a done record, other arguments and an expired record', async (store, clock) => {
    const reclaim = reclaimOf(store)
    assert.equal(await reclaim('s none', 'h1', LEASE, TTL), undefined, 'a fresh key')
    assert.equal((await store.begin('s none', 'h1', LEASE, TTL)).status, 'new', 'a fresh key stays free')
    const live = await claim(store, 's live')
    assert.equal(await reclaim('s live', 'h1', LEASE, TTL), undefined, 'a live lease')
    assert.equal(await store.complete('s live', live, { value: 1 }, TTL), true, 'the live owner still owns it')
    assert.equal(await reclaim('s live', 'h1', LEASE, TTL), undefined, 'a done record')
    await unknownRecord(store)
    assert.equal(await reclaim('s k1', 'h2', LEASE, TTL), undefined, 'another arguments hash')
    assert.deepEqual(await store.begin('s k1', 'h1', LEASE, TTL), { status: 'unknown', reason: 'recorded' })
    clock.t += TTL
    assert.equal(await reclaim('s k1', 'h1', LEASE, TTL), undefined, 'an expired record')
  })

  const corrupt: Record<string, RawRecord> = {
    'a state nobody writes': { state: 'finished' },
    'a token this store never hands out': { token: 'not-a-token' },
    'an unknown record holding a result': { result: '{"value":1}' },
    'an empty arguments hash': { argsHash: '' },
  }
  for (const [name, fields] of Object.entries(corrupt)) {
    contract(`reclaim never takes over a corrupt record (${name})`, async (store, clock, writeRaw) => {
      const token = await unknownRecord(store)
      const record = { argsHash: 'h1', state: 'unknown', token, leaseUntil: clock.t, expiresAt: clock.t + TTL, ...fields }
      await writeRaw('s k1', record)
      assert.equal(await reclaimOf(store)('s k1', 'h1', LEASE, TTL), undefined)
      const answer = await store.begin('s k1', 'h1', LEASE, TTL)
      assert.equal(answer.status === 'unknown' && answer.reason, 'corrupt', `begin still answers corrupt, got ${JSON.stringify(answer)}`)
    })
  }

  contract('of 50 concurrent reclaims of one unknown outcome exactly one gets a token', async (store) => {
    await unknownRecord(store)
    const reclaim = reclaimOf(store)
    const answers = await Promise.all(Array.from({ length: 50 }, () => reclaim('s k1', 'h1', LEASE, TTL)))
    assert.equal(answers.filter((a) => typeof a === 'string').length, 1)
  })

  contract('a reclaimed record has a fresh lease, then reads unknown (lease_expired) for a full TTL', async (store, clock) => {
    await unknownRecord(store)
    clock.t += TTL - 1
    assert.ok(typeof (await reclaimOf(store)('s k1', 'h1', LEASE, TTL)) === 'string')
    clock.t += LEASE - 1
    assert.deepEqual(await store.begin('s k1', 'h1', LEASE, TTL), { status: 'in_flight' })
    clock.t += 1
    assert.deepEqual(await store.begin('s k1', 'h1', LEASE, TTL), { status: 'unknown', reason: 'lease_expired' })
    clock.t += TTL - 1
    assert.deepEqual(await store.begin('s k1', 'h1', LEASE, TTL), { status: 'unknown', reason: 'lease_expired' })
    clock.t += 1
    assert.equal((await store.begin('s k1', 'h1', LEASE, TTL)).status, 'new')
  })

  contract('a reclaimed record may be recorded unknown again by its new owner, for a fresh TTL', async (store, clock) => {
    await unknownRecord(store)
    const token = await reclaimOf(store)('s k1', 'h1', LEASE, TTL)
    assert.ok(typeof token === 'string')
    assert.equal(await store.markUnknown('s k1', token, TTL), true)
    clock.t += TTL - 1
    assert.deepEqual(await store.begin('s k1', 'h1', LEASE, TTL), { status: 'unknown', reason: 'recorded' })
  })
  reclaimThroughLayerCases(contract)
}
