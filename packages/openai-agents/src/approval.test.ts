import { Agent, RunState, run } from '@openai/agents'
import { policy } from '@shallot/policy'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { shallotFunctionTools } from './index.js'
import { lastOutputs, scriptedModel } from './testing.js'

function payments() {
  const sent: string[] = []
  const transfer = {
    name: 'transfer',
    description: 'Move money',
    parameters: z.object({ to: z.string(), amountCents: z.number() }),
    effect: 'write' as const,
    execute: async ({ to, amountCents }: { to: string; amountCents: number }) => {
      sent.push(`${amountCents} to ${to}`)
      return `sent ${amountCents} to ${to}`
    },
  }
  return { transfer, sent }
}

const rules = [
  { action: 'approve' as const, tools: 'transfer', args: [{ arg: 'amountCents', gt: 10_000 }], reason: 'over $100 needs a person' },
]

/** A model that sends `amountCents` to bob, then says what it read. */
const model = (amountCents: number) =>
  scriptedModel([
    { calls: [{ name: 'transfer', args: { to: 'bob', amountCents } }] },
    (request) => ({ text: `read: ${lastOutputs(request).join(' | ')}` }),
  ])

describe("a policy's approve rule drives the Agents SDK's own needsApproval", () => {
  it('the call the rule matches becomes an interruption; state.approve runs it exactly once', async () => {
    const { transfer, sent } = payments()
    const shallot = shallotFunctionTools([transfer], { middleware: [policy({ rules })] })
    const agent = new Agent({ name: 'payer', model: model(50_000), tools: shallot.tools })
    const first = await run(agent, 'pay bob', { signal: shallot.signal })
    expect(first.interruptions.map((item) => [item.name, item.arguments])).toEqual([['transfer', '{"to":"bob","amountCents":50000}']])
    expect(sent).toEqual([])

    // Through the SDK's serialized state, as a host that asks a person later does.
    const state = await RunState.fromString(agent, first.state.toString())
    for (const item of state.getInterruptions()) state.approve(item)
    const second = await run(agent, state, { signal: shallot.signal, toolErrorFormatter: shallot.toolErrorFormatter })
    expect(second.finalOutput).toBe('read: sent 50000 to bob')
    expect(sent).toEqual(['50000 to bob'])
    expect(shallot.error).toBeUndefined()
  })

  it('state.reject: the tool never runs and the model reads denied_by_user, with the message when one is given', async () => {
    for (const [message, expected] of [
      [undefined, `{"error":"denied_by_user","message":"the user denied the call to 'transfer'"`],
      ['ask finance first', 'ask finance first'],
    ] as const) {
      const { transfer, sent } = payments()
      const shallot = shallotFunctionTools([transfer], { middleware: [policy({ rules })] })
      const agent = new Agent({ name: 'payer', model: model(50_000), tools: shallot.tools })
      const first = await run(agent, 'pay bob', { signal: shallot.signal })
      for (const item of first.interruptions) first.state.reject(item, message === undefined ? {} : { message })
      const second = await run(agent, first.state, { signal: shallot.signal, toolErrorFormatter: shallot.toolErrorFormatter })
      expect(second.finalOutput).toContain(expected)
      expect(sent).toEqual([])
    }
  })

  it('a call the rule does not match runs without an interruption; without a policy nothing asks', async () => {
    const small = payments()
    const shallot = shallotFunctionTools([small.transfer], { middleware: [policy({ rules })] })
    const result = await run(new Agent({ name: 'payer', model: model(5_000), tools: shallot.tools }), 'pay bob', { signal: shallot.signal })
    expect(result.interruptions).toEqual([])
    expect(result.finalOutput).toBe('read: sent 5000 to bob')
    expect(small.sent).toEqual(['5000 to bob'])

    const plain = payments()
    const bare = shallotFunctionTools([plain.transfer])
    const free = await run(new Agent({ name: 'payer', model: model(50_000), tools: bare.tools }), 'pay bob', { signal: bare.signal })
    expect(free.finalOutput).toBe('read: sent 50000 to bob')
  })

  it('approving the same interruption twice (two runs of one state) never runs the tool twice', async () => {
    const { transfer, sent } = payments()
    const shallot = shallotFunctionTools([transfer], { middleware: [policy({ rules })] })
    const agent = new Agent({ name: 'payer', model: model(50_000), tools: shallot.tools })
    const first = await run(agent, 'pay bob', { signal: shallot.signal })
    const saved = first.state.toString()
    const once = await RunState.fromString(agent, saved)
    for (const item of once.getInterruptions()) once.approve(item)
    expect((await run(agent, once, { signal: shallot.signal })).finalOutput).toBe('read: sent 50000 to bob')
    const twice = await RunState.fromString(agent, saved)
    for (const item of twice.getInterruptions()) twice.approve(item)
    const again = await run(agent, twice, { signal: shallot.signal })
    expect(again.finalOutput).toContain('approval_used')
    expect(sent).toEqual(['50000 to bob'])
  })
})
