import { policy } from '@shallot/policy'
import { generateText, type ModelMessage, stepCountIs, tool } from 'ai'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { shallotTools, type ToolApprovalRequestPart } from './index.js'
import { lastToolResults, scriptedLanguageModel } from './scripted-language-model.test-helper.js'

function payments() {
  const sent: string[] = []
  const transfer = tool({
    description: 'Move money',
    inputSchema: z.object({ to: z.string(), amountCents: z.number() }),
    execute: async ({ to, amountCents }) => {
      sent.push(`${amountCents} to ${to}`)
      return `sent ${amountCents} to ${to}`
    },
  })
  return { transfer, sent }
}

const rules = [
  { action: 'approve' as const, tools: 'transfer', args: [{ arg: 'amountCents', gt: 10_000 }], reason: 'over $100 needs a person' },
]

/** A model that sends `amountCents` to bob, then says what it read (a denial's reason, or the tool's text). */
const model = (amountCents: number) =>
  scriptedLanguageModel([
    { toolCalls: [{ id: 'call_pay', name: 'transfer', input: { to: 'bob', amountCents } }] },
    (prompt) => {
      const seen = lastToolResults(prompt)[0]?.output as { type: string; value?: unknown; reason?: string } | undefined
      return { text: `read (${seen?.type}): ${seen?.reason ?? String(seen?.value)}` }
    },
  ])

/** The first generation, stopped at the SDK's approval request; the messages a host keeps for the second. */
async function askFirst(amountCents: number) {
  const { transfer, sent } = payments()
  const shallot = shallotTools({ transfer }, { middleware: [policy({ rules })], effects: { transfer: 'write' } })
  const llm = model(amountCents)
  const prompt = 'pay bob'
  const first = await generateText({ model: llm, tools: shallot.tools, prompt, stopWhen: stepCountIs(5) })
  const requests = first.content.filter((part) => part.type === 'tool-approval-request') as unknown as ToolApprovalRequestPart[]
  const messages: ModelMessage[] = [{ role: 'user', content: prompt }, ...first.response.messages]
  return { shallot, llm, sent, requests, messages }
}

describe("a policy's approve rule drives the AI SDK's own tool approval (needsApproval)", () => {
  it('the call the rule matches is a tool-approval-request and does not run; approving it runs it exactly once', async () => {
    const { shallot, llm, sent, requests, messages } = await askFirst(50_000)
    expect(requests.map((r) => [r.toolCall.toolName, r.toolCall.input])).toEqual([['transfer', { to: 'bob', amountCents: 50_000 }]])
    expect(sent).toEqual([])
    const response = await shallot.approvalResponse(requests[0] as ToolApprovalRequestPart, 'approve')
    expect(response).toEqual({ type: 'tool-approval-response', approvalId: requests[0]?.approvalId, approved: true })
    const second = await generateText({
      model: llm,
      tools: shallot.tools,
      messages: [...messages, { role: 'tool', content: [response] }],
      stopWhen: stepCountIs(5),
    })
    expect(second.text).toBe('read (text): sent 50000 to bob')
    expect(sent).toEqual(['50000 to bob'])
    expect(shallot.error).toBeUndefined()
  })

  it('a raw approved: true from a UI (not through approvalResponse) is the same yes', async () => {
    const { shallot, llm, sent, requests, messages } = await askFirst(50_000)
    const approval = { type: 'tool-approval-response' as const, approvalId: requests[0]?.approvalId as string, approved: true }
    const second = await generateText({ model: llm, tools: shallot.tools, messages: [...messages, { role: 'tool', content: [approval] }] })
    expect(second.text).toBe('read (text): sent 50000 to bob')
    expect(sent).toEqual(['50000 to bob'])
  })

  it('a denial through approvalResponse never runs the tool and the model reads denied_by_user with the reason', async () => {
    for (const [answer, expected] of [
      ['deny', `{"error":"denied_by_user","message":"the user denied the call to 'transfer'"`],
      [{ deny: 'ask finance first' }, "the user denied the call to 'transfer': ask finance first"],
    ] as const) {
      const { shallot, llm, sent, requests, messages } = await askFirst(50_000)
      const response = await shallot.approvalResponse(requests[0] as ToolApprovalRequestPart, answer)
      expect(response.approved).toBe(false)
      const second = await generateText({
        model: llm,
        tools: shallot.tools,
        messages: [...messages, { role: 'tool', content: [response] }],
      })
      expect(second.text).toContain('read (execution-denied): ')
      expect(second.text).toContain(expected)
      expect(sent).toEqual([])
    }
  })

  it('a call the rule does not match runs at once; the answers are checked', async () => {
    const { shallot, sent, requests } = await askFirst(5_000)
    expect(requests).toEqual([])
    expect(sent).toEqual(['5000 to bob'])
    await expect(
      shallot.approvalResponse({ approvalId: 'a', toolCall: { toolCallId: 'c', toolName: 'transfer', input: {} } }, { args: {} } as never),
    ).rejects.toThrow('the AI SDK has no edited-arguments answer')
    await expect(shallot.approvalResponse(null as never, 'approve')).rejects.toThrow('takes a tool-approval-request part')
  })
})
