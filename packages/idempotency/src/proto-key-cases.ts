import assert from 'node:assert/strict'
import { createStack, defineTool } from '@shallot/core'
import { z } from 'zod'
import { type Contract, LEASE, TTL, type WriteRaw } from './contract-parts.js'
import { idempotency } from './idempotency.js'
import type { IdempotencyStore } from './idempotency-store.js'

/** An API's answer as JSON.parse reads it: own `__proto__` keys at the top, nested, and inside an array. */
const ANSWER = '{"chargeId":"ch_1","__proto__":{"admin":true},"items":[{"__proto__":{"polluted":1},"sku":"a"}],"meta":{"__proto__":null}}'

/**
 * Asserts that `value` is the JSON text `text` as a value (key order aside: a replay may come from
 * canonical JSON), own `__proto__` keys included, that every object in it is a plain object (no key
 * became a prototype), and that `Object.prototype` gained nothing.
 */
function assertFaithful(value: unknown, text: string, what: string): void {
  const pending: Array<[unknown, unknown, string]> = [[value, JSON.parse(text), '(value)']]
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const [actual, expected, path] = next
    if (typeof expected !== 'object' || expected === null) {
      assert.equal(actual, expected, `${what}: ${path} is ${JSON.stringify(expected)}`)
      continue
    }
    assert.ok(typeof actual === 'object' && actual !== null, `${what}: ${path} is an object or array`)
    assert.equal(Array.isArray(actual), Array.isArray(expected), `${what}: ${path} is ${Array.isArray(expected) ? '' : 'not '}an array`)
    if (!Array.isArray(actual))
      assert.equal(Object.getPrototypeOf(actual), Object.prototype, `${what}: no key of ${path} became a prototype`)
    const keys = Object.keys(expected)
    assert.deepEqual(Object.keys(actual).sort(), [...keys].sort(), `${what}: ${path} has exactly the own keys stored`)
    for (const key of keys) {
      pending.push([(actual as Record<string, unknown>)[key], (expected as Record<string, unknown>)[key], `${path}.${key}`])
    }
  }
  assertUnpolluted(what)
}

function assertUnpolluted(what: string): void {
  const probe: Record<string, unknown> = {}
  assert.equal(probe.admin, undefined, `${what}: Object.prototype is untouched`)
  assert.equal(probe.polluted, undefined, `${what}: Object.prototype is untouched`)
}

/**
 * The contract's cases for results that hold an own `__proto__` key (legal JSON, as an API may
 * answer it): the store keeps and replays them exactly, as a completed call and as a planted record,
 * and `idempotency()` replays the identical second call with the value the first call returned.
 *
 * @example
 * protoKeyCases(contract, claim) // called by idempotencyStoreContract()
 */
export function protoKeyCases(contract: Contract, claim: (store: IdempotencyStore, key: string) => Promise<string>): void {
  contract('a result holding own __proto__ keys replays exactly, and no prototype changes', async (store) => {
    const token = await claim(store, 's k1')
    assert.equal(await store.complete('s k1', token, { value: JSON.parse(ANSWER) }, TTL), true)
    for (const read of ['first', 'second']) {
      const again = await store.begin('s k1', 'h1', LEASE, TTL)
      assert.ok(again.status === 'done', `${read} begin: expected done, got ${JSON.stringify(again).slice(0, 200)}`)
      assertFaithful(again.result.value, ANSWER, `${read} begin`)
    }
  })

  contract('a planted record whose value holds a __proto__ key replays it as data', async (store, clock, writeRaw: WriteRaw) => {
    const token = await claim(store, 's k1')
    const result = '{"value":{"__proto__":{"admin":true}}}'
    await writeRaw('s k1', { argsHash: 'h1', state: 'done', token, leaseUntil: clock.t + LEASE, expiresAt: clock.t + TTL, result })
    const again = await store.begin('s k1', 'h1', LEASE, TTL)
    assert.ok(again.status === 'done', `expected done, got ${JSON.stringify(again).slice(0, 200)}`)
    assertFaithful(again.result.value, '{"__proto__":{"admin":true}}', 'planted')
  })

  contract(
    'through idempotency(): a result holding own __proto__ keys replays to the identical call, alone and in parallel',
    async (store) => {
      let executions = 0
      const chargeCard = defineTool({
        name: 'charge_card',
        description: 'Charge a card',
        input: z.object({ amount: z.number() }),
        execute: () => {
          executions++
          return JSON.parse(ANSWER) as unknown
        },
      })
      const stack = createStack({ tools: [chargeCard], middleware: [idempotency({ store, leaseMs: LEASE, ttlMs: TTL })] })
      const call = { id: 'c1', name: 'charge_card', args: { amount: 5 } }
      const parallel = await Promise.all(['c1', 'c2', 'c3'].map((id) => stack.dispatch({ ...call, id })))
      const first = parallel[0]
      assert.equal(first?.ok, true, `the first call succeeds, got ${first?.content.slice(0, 200)}`)
      for (const [i, result] of parallel.entries()) {
        assert.equal(result.ok, true, `parallel call ${i + 1} succeeds, got ${result.content.slice(0, 200)}`)
        assertFaithful(result.value, ANSWER, `parallel call ${i + 1}`)
        assertFaithful(JSON.parse(result.content), ANSWER, `what parallel call ${i + 1} tells the model`)
      }
      const second = await stack.dispatch({ ...call, id: 'c4' })
      assert.equal(second.ok, true, `the identical call is replayed, got ${second.error?.code}: ${second.content.slice(0, 200)}`)
      assert.equal(second.replayed, true, 'the identical call is a replay')
      assertFaithful(second.value, ANSWER, 'the replay')
      assertFaithful(JSON.parse(second.content), ANSWER, 'what the replay tells the model')
      assert.equal(executions, 1, 'the tool ran once')
    },
  )
}
