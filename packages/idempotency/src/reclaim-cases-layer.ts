import assert from 'node:assert/strict'
import { type Clock, createRun, createStack, defineTool, type ReconcileAnswer, ToolError } from '@shallot/core'
import { z } from 'zod'
import { type Contract, TTL } from './contract-parts.js'
import { idempotency } from './idempotency.js'
import type { IdempotencyStore } from './idempotency-store.js'

/** The lease the through-the-stack cases give idempotency(): longer than any reconciliation they run. */
const STACK_LEASE = 30_000

/** The store's `reclaim`, or an assertion error that says how to leave these cases out. */
export function reclaimOf(store: IdempotencyStore): NonNullable<IdempotencyStore['reclaim']> {
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

/**
 * The reclaim cases through `idempotency()`: a later identical call reconciles the unknown outcome
 * (also from a second process after a crash), once for 50 parallel callers, and a reconciler that
 * misbehaves leaves the record unknown.
 *
 * @example
 * reclaimThroughLayerCases(contract) // called by reclaimCases()
 */
export function reclaimThroughLayerCases(contract: Contract): void {
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
