import assert from 'node:assert/strict'
import { type Clock, createRun, createStack, defineTool, type ReconcileAnswer, ToolError } from '@shallot/core'
import { z } from 'zod'
import { type Contract, LEASE, type RawRecord, TTL } from './contract-parts.js'
import { idempotency } from './idempotency.js'
import type { IdempotencyStore } from './idempotency-store.js'

/** The lease the through-the-stack cases give idempotency(): longer than any reconciliation they run. */
const STACK_LEASE = 30_000

/** The store's `reclaim`, or an assertion error that says how to leave these cases out. */
function reclaimOf(store: IdempotencyStore): NonNullable<IdempotencyStore['reclaim']> {
  const reclaim = store.reclaim
  assert.ok(
    typeof reclaim === 'function',
    'the store has no reclaim(): implement it, or pass { reclaim: false } to idempotencyStoreContract to leave these cases out',
  )
  return reclaim.bind(store)
}

/**
 * A stack clock on the contract's time: a sleep moves time on by its length as soon as nothing
 * else is left to run (the next turn of the event loop), so nothing waits for real time.
 */
function leapingClock(clock: { t: number }): Clock {
  return {
    now: () => clock.t,
    sleep: (ms, signal) =>
      new Promise((resolve, reject) => {
        if (signal?.aborted) return reject(signal.reason)
        const onAbort = () => {
          clearImmediate(handle)
          reject(signal?.reason)
        }
        const handle = setImmediate(() => {
          signal?.removeEventListener('abort', onAbort)
          clock.t += ms
          resolve()
        })
        signal?.addEventListener('abort', onAbort, { once: true })
      }),
  }
}

/** The same records under another object identity: what a second process sharing the store looks like. */
function otherProcess(store: IdempotencyStore): IdempotencyStore {
  const reclaim = reclaimOf(store)
  return {
    begin: (...a) => store.begin(...a),
    complete: (...a) => store.complete(...a),
    release: (...a) => store.release(...a),
    markUnknown: (...a) => store.markUnknown(...a),
    reclaim: (...a) => reclaim(...a),
  }
}

/** A charge_card write whose first execution times out after the charge went through, and whose reconciler the case scripts. */
function charging(store: IdempotencyStore, clock: { t: number }, answer: () => ReconcileAnswer | Promise<ReconcileAnswer>) {
  const seen = { runs: 0, asked: 0 }
  const tool = defineTool({
    name: 'charge_card',
    description: 'Charge a card',
    input: z.object({ amount: z.number() }),
    execute: () => {
      if (++seen.runs === 1) throw new ToolError('timeout', 'charge_card timed out')
      return { chargeId: `ch_${seen.runs}` }
    },
    reconcile: () => {
      seen.asked++
      return answer()
    },
  })
  const stack = (over: IdempotencyStore = store) =>
    createStack({
      clock: leapingClock(clock),
      tools: [tool],
      middleware: [idempotency({ store: over, leaseMs: STACK_LEASE, ttlMs: TTL, reconcileDelayMs: 10, reconcileTimeoutMs: 100 })],
    })
  // One run id for every stack of a case, so the calls are identical; a run per case, so no budget runs out.
  return { seen, stack, run: createRun({ id: 'run-1' }) }
}

const call = (id: string) => ({ id, name: 'charge_card', args: { amount: 5 } })

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

/**
 * The reclaim cases through `idempotency()`: a later identical call reconciles the unknown outcome
 * (also from a second process after a crash), once for 50 parallel callers, and a reconciler that
 * misbehaves leaves the record unknown.
 *
 * @example
 * reclaimThroughLayerCases(contract) // called by reclaimCases()
 */
function reclaimThroughLayerCases(contract: Contract): void {
  contract(
    'through idempotency(): a later identical call learns the write landed, replays it, and never runs it again',
    async (store, clock) => {
      let landed = false
      const { seen, stack, run } = charging(store, clock, () =>
        landed ? { status: 'applied', result: { chargeId: 'ch_1' } } : { status: 'unknown' },
      )
      const first = await stack().dispatch(call('c1'), { run })
      assert.equal(first.error?.code, 'timeout', 'the first call keeps its own error')
      landed = true
      const later = await stack().dispatch(call('c2'), { run })
      assert.deepEqual([later.ok, later.replayed, later.value], [true, true, { chargeId: 'ch_1' }], later.content)
      const again = await stack().dispatch(call('c3'), { run })
      assert.deepEqual(
        again.trace.map((e) => e.type),
        ['idempotency.replayed'],
        'the reconciled result is stored',
      )
      assert.deepEqual(seen, { runs: 1, asked: 4 })
    },
  )

  contract('through idempotency(): a later identical call runs the write once when the earlier one did not land', async (store, clock) => {
    let answer: ReconcileAnswer = { status: 'unknown' }
    const { seen, stack, run } = charging(store, clock, () => answer)
    await stack().dispatch(call('c1'), { run })
    answer = { status: 'not_applied' }
    const later = await stack().dispatch(call('c2'), { run })
    assert.deepEqual([later.ok, later.replayed, later.value], [true, false, { chargeId: 'ch_2' }], later.content)
    assert.equal((await stack().dispatch(call('c3'), { run })).replayed, true)
    assert.equal(seen.runs, 2)
  })

  const misbehaving: Record<string, () => ReconcileAnswer | Promise<ReconcileAnswer>> = {
    throws: () => {
      throw new Error('lookup API down')
    },
    hangs: () => new Promise<never>(() => {}),
    'answers applied without a result': () => ({ status: 'applied' }) as ReconcileAnswer,
  }
  for (const [name, answer] of Object.entries(misbehaving)) {
    contract(
      `through idempotency(): a reconciler that ${name} leaves the later call refused, and the write never runs again`,
      async (store, clock) => {
        const { seen, stack, run } = charging(store, clock, answer)
        await stack().dispatch(call('c1'), { run })
        const later = await stack().dispatch(call('c2'), { run })
        assert.equal(later.error?.code, 'outcome_unknown', later.content)
        assert.match(later.content, /checking 3 times could not tell/)
        assert.equal(seen.runs, 1)
      },
    )
  }

  contract(
    'through idempotency(): after a crash before the reconciliation, the next process’s identical call reconciles',
    async (store, clock) => {
      let sent!: () => void
      const chargeSent = new Promise<void>((resolve) => {
        sent = resolve
      })
      const crashing = defineTool({
        name: 'charge_card',
        description: 'Charge a card',
        input: z.object({ amount: z.number() }),
        execute: () => {
          sent()
          return new Promise<never>(() => {}) // the charge is sent, then the process dies
        },
      })
      const dead = createStack({
        clock: leapingClock(clock),
        tools: [crashing],
        middleware: [idempotency({ store, leaseMs: STACK_LEASE, ttlMs: TTL })],
      })
      void dead.dispatch(call('c1'), { run: createRun({ id: 'run-1' }) })
      await chargeSent
      clock.t += STACK_LEASE
      const { seen, stack, run } = charging(store, clock, () => ({ status: 'applied', result: { chargeId: 'ch_1' } }))
      const resumed = await stack(otherProcess(store)).dispatch(call('c2'), { run })
      assert.deepEqual([resumed.ok, resumed.value], [true, { chargeId: 'ch_1' }], resumed.content)
      assert.equal(resumed.trace[0]?.type, 'idempotency.reclaimed')
      assert.deepEqual(seen, { runs: 0, asked: 1 })
    },
  )

  contract(
    'through idempotency(): 50 identical parallel calls in two processes after an unknown outcome: one reconciliation, one result',
    async (store, clock) => {
      let landed = false
      const { seen, stack, run } = charging(store, clock, () =>
        landed ? { status: 'applied', result: { chargeId: 'ch_1' } } : { status: 'unknown' },
      )
      await stack().dispatch(call('c1'), { run })
      const asked = seen.asked
      landed = true
      const [one, two] = [stack(), stack(otherProcess(store))]
      const results = await Promise.all(Array.from({ length: 50 }, (_, i) => (i % 2 === 0 ? one : two).dispatch(call(`p${i}`), { run })))
      assert.equal(seen.asked - asked, 1, 'one reconciliation')
      for (const result of results) assert.deepEqual([result.ok, result.value], [true, { chargeId: 'ch_1' }], result.content)
      assert.equal(seen.runs, 1)
    },
  )
}
