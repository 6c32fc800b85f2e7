import assert from 'node:assert/strict'
import { createStack, defineTool } from '@shallot/core'
import { z } from 'zod'
import { type Contract, LEASE, type RawRecord, TTL, type WriteRaw } from './contract-parts.js'
import { idempotency } from './idempotency.js'
import { argsHashOf, storeKeyOf } from './idempotency-key.js'
import type { BeginResult, IdempotencyStore } from './idempotency-store.js'

const DEEP = 100_000

/**
 * Records that are not well-formed, as fields that replace those of a well-formed done record.
 * `undefined` leaves the field out. Exported so a store's own tests can plant them too.
 *
 * @example
 * await writeRaw('tenant-a order-42', { ...wellFormed, ...corruptRecords['a result that is a JSON string'] })
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
  'a result nested 100,000 levels deep': { result: `{"value":${'['.repeat(DEEP)}${']'.repeat(DEEP)}}` },
  'a done record without a result': { result: undefined },
  'a status of 42': { state: 42 },
  'a status nobody writes': { state: 'finished' },
  'a fencing token that is NaN': { token: Number.NaN },
  'a lease end that is NaN': { state: 'pending', leaseUntil: Number.NaN, result: undefined },
  'an expiry that is not a number': { expiresAt: 'tomorrow' },
  'an empty arguments hash': { argsHash: '' },
}

/**
 * The contract's corrupt-record cases: each record of {@link corruptRecords} answers `unknown
 * (corrupt)` from the store, and refuses the identical call through `idempotency()` without
 * running the tool; an expired lease, an expired corrupt record and a huge well-formed value too.
 *
 * @example
 * corruptRecordCases(contract, claim) // called by idempotencyStoreContract()
 */
export function corruptRecordCases(contract: Contract, claim: (store: IdempotencyStore, key: string) => Promise<string>): void {
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
    const HUGE_VALUE = 'x'.repeat(2 * 1024 * 1024)
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
