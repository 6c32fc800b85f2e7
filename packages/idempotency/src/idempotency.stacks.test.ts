import { createRun, createStack, defineTool } from '@shallot/core'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { idempotency, memoryIdempotencyStore } from './index.js'

/** A `charge_card` write that says who ran it, and counts its runs. */
function chargeCard(owner: string) {
  const runs: string[] = []
  const tool = defineTool({
    name: 'charge_card',
    description: 'Charge a card',
    input: z.object({ amount: z.number() }),
    effect: 'write',
    execute: ({ amount }) => {
      runs.push(`${owner} ${amount}`)
      return `charged ${amount} for ${owner}`
    },
  })
  return { tool, runs }
}

const charge = (id: string) => ({ id, name: 'charge_card', args: { amount: 5 } })

describe('idempotency: one layer in two stacks', () => {
  it('never replays one stack’s result in the other when the layer keeps its own store', async () => {
    const layer = idempotency()
    const alice = chargeCard('alice')
    const bob = chargeCard('bob')
    const aliceStack = createStack({ middleware: [layer], tools: [alice.tool] })
    const bobStack = createStack({ middleware: [layer], tools: [bob.tool] })
    expect((await aliceStack.dispatch(charge('c1'))).value).toBe('charged 5 for alice')
    const bobs = await bobStack.dispatch(charge('c1'))
    expect(bobs.value).toBe('charged 5 for bob')
    expect(bobs.replayed).toBe(false)
    expect(bob.runs).toEqual(['bob 5'])
    // Within a stack, the same call on the same run still replays.
    expect((await aliceStack.dispatch(charge('c2'))).replayed).toBe(true)
    expect(alice.runs).toEqual(['alice 5'])
  })

  it('keeps parallel identical calls of two stacks apart: each runs its own tool once', async () => {
    const layer = idempotency()
    const stacks = ['alice', 'bob', 'carol'].map((who) => {
      const card = chargeCard(who)
      return { card, stack: createStack({ middleware: [layer], tools: [card.tool] }) }
    })
    const results = await Promise.all(stacks.flatMap(({ stack }) => [stack.dispatch(charge('c1')), stack.dispatch(charge('c2'))]))
    expect(results.map((r) => r.value)).toEqual([
      'charged 5 for alice',
      'charged 5 for alice',
      'charged 5 for bob',
      'charged 5 for bob',
      'charged 5 for carol',
      'charged 5 for carol',
    ])
    expect(stacks.map(({ card }) => card.runs)).toEqual([['alice 5'], ['bob 5'], ['carol 5']])
  })

  it('a store the host passes is shared as given: scope and run ids keep callers apart there', async () => {
    const store = memoryIdempotencyStore()
    const alice = chargeCard('alice')
    const bob = chargeCard('bob')
    const aliceStack = createStack({ middleware: [idempotency({ store, scope: 'alice' })], tools: [alice.tool] })
    const bobStack = createStack({ middleware: [idempotency({ store, scope: 'bob' })], tools: [bob.tool] })
    const run = createRun({ id: 'order-42' })
    await aliceStack.dispatch(charge('c1'), { run })
    expect((await bobStack.dispatch(charge('c1'), { run })).value).toBe('charged 5 for bob')
    // Same scope, same run, same store: one logical call, wherever it is dispatched from.
    const again = createStack({ middleware: [idempotency({ store, scope: 'alice' })], tools: [chargeCard('alice again').tool] })
    expect((await again.dispatch(charge('c1'), { run })).replayed).toBe(true)
  })
})
