import { AIMessage, type BaseMessage, ToolMessage } from '@langchain/core/messages'
import { fakeModel } from '@langchain/core/testing'
import { Command, MemorySaver } from '@langchain/langgraph'
import { policy } from '@shallot/policy'
import { createAgent, tool } from 'langchain'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { shallotMiddleware } from './index.js'

const rules = [
  { action: 'approve' as const, tools: 'transfer', args: [{ arg: 'amountCents', gt: 10_000 }], reason: 'over $100 needs a person' },
]

function payments() {
  const sent: string[] = []
  const transfer = tool(
    async ({ to, amountCents }) => {
      sent.push(`${amountCents} to ${to}`)
      return `sent ${amountCents} to ${to}`
    },
    { name: 'transfer', description: 'Move money', schema: z.object({ to: z.string(), amountCents: z.number() }) },
  )
  return { transfer, sent }
}

const lastText = (messages: BaseMessage[]) => String(messages.at(-1)?.content)

/** An agent whose model sends `amountCents` to bob, then says what it read; checkpointed, so it can be interrupted. */
function setup(amountCents: number) {
  const { transfer, sent } = payments()
  const model = fakeModel()
    .respondWithTools([{ name: 'transfer', args: { to: 'bob', amountCents } }])
    .respond((messages) => {
      const last = messages.at(-1)
      return new AIMessage(`read: ${ToolMessage.isInstance(last) ? String(last.content) : 'nothing'}`)
    })
  const agent = createAgent({
    model,
    tools: [transfer],
    middleware: [shallotMiddleware({ middleware: [policy({ rules })], effects: { transfer: 'write' } })],
    checkpointer: new MemorySaver(),
  })
  const config = { configurable: { thread_id: `t-${amountCents}-${Math.random()}` } }
  return { agent, sent, config }
}

describe("a policy's approve rule is a LangGraph interrupt in the human-in-the-loop middleware's shape", () => {
  it('interrupts before the tool runs; resuming with approve runs it exactly once', async () => {
    const { agent, sent, config } = setup(50_000)
    const first = await agent.invoke({ messages: [{ role: 'user', content: 'pay bob' }] }, config)
    const interrupts = (first as { __interrupt__?: Array<{ value: unknown }> }).__interrupt__ ?? []
    expect(interrupts.map((i) => i.value)).toEqual([
      {
        actionRequests: [
          { name: 'transfer', args: { to: 'bob', amountCents: 50_000 }, description: expect.stringContaining('needs a person') },
        ],
        reviewConfigs: [{ actionName: 'transfer', allowedDecisions: ['approve', 'edit', 'reject'] }],
      },
    ])
    expect(sent).toEqual([])

    const second = await agent.invoke(new Command({ resume: { decisions: [{ type: 'approve' }] } }), config)
    expect(lastText(second.messages)).toBe('read: sent 50000 to bob')
    expect(sent).toEqual(['50000 to bob'])
  })

  it('reject: the tool never runs and the model reads denied_by_user with the message', async () => {
    const { agent, sent, config } = setup(50_000)
    await agent.invoke({ messages: [{ role: 'user', content: 'pay bob' }] }, config)
    const done = await agent.invoke(new Command({ resume: { decisions: [{ type: 'reject', message: 'ask finance first' }] } }), config)
    expect(lastText(done.messages)).toContain(
      `"error":"denied_by_user","message":"the user denied the call to 'transfer': ask finance first"`,
    )
    expect(sent).toEqual([])
  })

  it('edit: the tool runs with the edited arguments, validated by its schema', async () => {
    const { agent, sent, config } = setup(50_000)
    await agent.invoke({ messages: [{ role: 'user', content: 'pay bob' }] }, config)
    const edited = { type: 'edit', editedAction: { name: 'transfer', args: { to: 'alice', amountCents: 20_000 } } }
    const done = await agent.invoke(new Command({ resume: { decisions: [edited] } }), config)
    expect(lastText(done.messages)).toBe('read: sent 20000 to alice')
    expect(sent).toEqual(['20000 to alice'])

    const bad = setup(50_000)
    await bad.agent.invoke({ messages: [{ role: 'user', content: 'pay bob' }] }, bad.config)
    const wrong = { type: 'edit', editedAction: { name: 'transfer', args: { to: 'alice', amountCents: 'lots' } } }
    const refused = await bad.agent.invoke(new Command({ resume: { decisions: [wrong] } }), bad.config)
    expect(lastText(refused.messages)).toContain('Invalid arguments for transfer')
    expect(bad.sent).toEqual([])
  })

  it('a malformed resume value is a clear error and runs nothing; a call the rule does not match never interrupts', async () => {
    const { agent, sent, config } = setup(50_000)
    await agent.invoke({ messages: [{ role: 'user', content: 'pay bob' }] }, config)
    await expect(agent.invoke(new Command({ resume: { decisions: [] } }), config)).rejects.toThrow(
      'shallotMiddleware(): 1 call waits for approval (transfer); resume with new Command({ resume: { decisions: [',
    )
    const other = setup(50_000)
    await other.agent.invoke({ messages: [{ role: 'user', content: 'pay bob' }] }, other.config)
    await expect(other.agent.invoke(new Command({ resume: { decisions: [{ type: 'maybe' }] } }), other.config)).rejects.toThrow(
      "decisions[0]: a decision's type must be one of approve, edit, reject",
    )
    expect(sent).toEqual([])
    expect(other.sent).toEqual([])

    const small = setup(5_000)
    const done = await small.agent.invoke({ messages: [{ role: 'user', content: 'pay bob' }] }, small.config)
    expect((done as { __interrupt__?: unknown[] }).__interrupt__).toBeUndefined()
    expect(lastText(done.messages)).toBe('read: sent 5000 to bob')
  })
})
