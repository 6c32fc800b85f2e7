import { AIMessage, type BaseMessage, HumanMessage, ToolMessage } from '@langchain/core/messages'
import { createAgent, createMiddleware, tool } from 'langchain'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { shallotMiddleware } from './index.js'
import { ScriptedChatModel, toolMessages } from './scripted-chat-model.test-helper.js'

/** A tool with no required argument: dispatched with `{}` in place of a thread's broken text, it would run. */
function listTool() {
  const ran: unknown[] = []
  const list = tool(
    async (args) => {
      ran.push(args)
      return 'listed'
    },
    { name: 'list_files', description: 'List files', schema: z.object({ dir: z.string().optional() }) },
  )
  return { list, ran }
}

/**
 * A model every thread shares: each thread's first turn is a call whose arguments are not JSON and
 * carry no id (so the middleware names it, the same way in every thread), answered only once every
 * thread has had its turn, so all the broken calls are noted before any is dispatched.
 */
function brokenTurnsTogether(threads: number) {
  let arrived = 0
  let release: () => void = () => {}
  const together = new Promise<void>((resolve) => {
    release = resolve
  })
  const model = new ScriptedChatModel([])
  ;(model as unknown as { _generate: (messages: BaseMessage[]) => Promise<unknown> })._generate = async (messages) => {
    const last = messages.at(-1)
    if (ToolMessage.isInstance(last)) return { generations: [{ text: 'done', message: new AIMessage('done') }] }
    // Not JSON at all, so the refusal quotes the text it was given.
    const raw = String(last?.content)
    arrived++
    if (arrived === threads) release()
    await together
    const message = new AIMessage({
      content: '',
      invalid_tool_calls: [{ name: 'list_files', args: raw, error: 'Malformed args.', type: 'invalid_tool_call' }],
    })
    return { generations: [{ text: '', message }] }
  }
  return model
}

async function runThreads(threads: number) {
  const { list, ran } = listTool()
  const agent = createAgent({ model: brokenTurnsTogether(threads), tools: [list], middleware: [shallotMiddleware()] })
  const secrets = Array.from({ length: threads }, (_, i) => `thread-${i}-secret`)
  const outcomes = await Promise.all(
    secrets.map((secret, i) => agent.invoke({ messages: [new HumanMessage(secret)] }, { configurable: { thread_id: `t${i}` } })),
  )
  return { ran, secrets, refusals: outcomes.map(({ messages }) => String(toolMessages(messages)[0]?.content)) }
}

describe('malformed calls of threads running at once', () => {
  it('two threads whose broken calls get the same id each dispatch their own text, and neither tool runs', async () => {
    const { ran, secrets, refusals } = await runThreads(2)
    expect(ran).toEqual([])
    for (const [i, refusal] of refusals.entries()) {
      expect(JSON.parse(refusal)).toMatchObject({ error: 'invalid_arguments', message: expect.stringMatching(/not valid JSON/) })
      for (const [j, secret] of secrets.entries()) expect(refusal.includes(secret)).toBe(i === j)
    }
  })

  it('fifty threads at once: no tool runs with empty arguments, no thread reads another thread’s text', async () => {
    const { ran, secrets, refusals } = await runThreads(50)
    expect(ran).toEqual([])
    for (const [i, refusal] of refusals.entries()) {
      expect(JSON.parse(refusal).error).toBe('invalid_arguments')
      expect(secrets.filter((secret) => refusal.includes(secret))).toEqual([secrets[i]])
    }
  })

  it('forgets a broken call that was never dispatched: the thread’s next call with that id runs with its own arguments', async () => {
    const { list, ran } = listTool()
    const model = new ScriptedChatModel([
      new AIMessage({
        content: '',
        invalid_tool_calls: [{ id: 'call_1', name: 'list_files', args: '{"dir":', error: 'Malformed args.', type: 'invalid_tool_call' }],
      }),
      new AIMessage({ content: '', tool_calls: [{ id: 'call_1', name: 'list_files', args: { dir: 'src' }, type: 'tool_call' }] }),
      new AIMessage('done'),
    ])
    // Another middleware ends the first invocation after the model's turn, before its call is dispatched.
    let ended = false
    const endOnce = createMiddleware({
      name: 'end-once',
      afterModel: {
        canJumpTo: ['end'],
        hook: () => {
          if (ended) return undefined
          ended = true
          return { jumpTo: 'end' }
        },
      },
    })
    const agent = createAgent({ model, tools: [list], middleware: [endOnce, shallotMiddleware()] })
    const config = { configurable: { thread_id: 't' } }
    await agent.invoke({ messages: [new HumanMessage('list')] }, config)
    expect(ran).toEqual([])

    const { messages } = await agent.invoke({ messages: [new HumanMessage('list src')] }, config)
    expect(ran).toEqual([{ dir: 'src' }])
    expect(toolMessages(messages).map((m) => m.status)).toEqual(['success'])
  })
})
