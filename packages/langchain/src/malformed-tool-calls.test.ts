import { AIMessage, AIMessageChunk, type BaseMessage, ToolMessage } from '@langchain/core/messages'
import { stuckLoop } from '@shallot/stuck-loop'
import { createAgent, tool } from 'langchain'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { loopErrorOf, shallotMiddleware } from './index.js'
import { ScriptedChatModel, toolMessages } from './scripted-chat-model.test-helper.js'

function readFileTool() {
  const ran: string[] = []
  const readFile = tool(
    async ({ path }) => {
      ran.push(path)
      return path === 'src/main.rs' ? 'fn main() {}' : `no file ${path}`
    },
    { name: 'read_file', description: 'Read a file', schema: z.object({ path: z.string() }) },
  )
  return { readFile, ran }
}

const truncated = '{"path":"src/mian.r'
const malformedTurn = () =>
  new AIMessage({
    content: '',
    invalid_tool_calls: [{ id: 'call_1', name: 'read_file', args: truncated, error: 'Malformed args.', type: 'invalid_tool_call' }],
  })
const streamedTurn = (id: string) => [
  new AIMessageChunk({ content: '', tool_call_chunks: [{ id, name: 'read_file', args: '{"path":', index: 0, type: 'tool_call_chunk' }] }),
  new AIMessageChunk({ content: '', tool_call_chunks: [{ args: '"src/mian.r', index: 0, type: 'tool_call_chunk' }] }),
]
const lastText = (messages: BaseMessage[]) => String(messages.at(-1)?.content)
const recoverIfTold = (messages: BaseMessage[]) => {
  const last = messages.at(-1)
  return ToolMessage.isInstance(last) && last.status === 'error' && String(last.content).includes('invalid_arguments')
    ? new AIMessage({ content: '', tool_calls: [{ id: 'call_2', name: 'read_file', args: { path: 'src/main.rs' }, type: 'tool_call' }] })
    : new AIMessage('never told')
}
const answer = (messages: BaseMessage[]) => new AIMessage(`read: ${lastText(messages)}`)

async function streamed(agent: { stream: (...args: never[]) => Promise<AsyncIterable<unknown>> }, input: unknown) {
  const chunks: unknown[] = []
  for await (const chunk of await agent.stream(input as never, { streamMode: 'values' } as never)) chunks.push(chunk)
  return (chunks.at(-1) as { messages: BaseMessage[] }).messages
}

describe('LangChain alone (what shallotMiddleware fixes)', () => {
  it('ends at once with an empty answer when the arguments are malformed: the model is never told', async () => {
    const { readFile, ran } = readFileTool()
    const model = new ScriptedChatModel([malformedTurn(), recoverIfTold, answer])
    const { messages } = await createAgent({ model, tools: [readFile] }).invoke({ messages: [{ role: 'user', content: 'read main' }] })
    expect(lastText(messages)).toBe('')
    expect(model.seen).toHaveLength(1)
    expect(ran).toEqual([])
  })

  it('runs the tool with the truncated argument of a streamed call', async () => {
    const { readFile, ran } = readFileTool()
    const model = new ScriptedChatModel([streamedTurn('call_1'), new AIMessage('done')])
    const agent = createAgent({ model, tools: [readFile] })
    const stream = await agent.stream({ messages: [{ role: 'user', content: 'read main' }] }, { streamMode: 'messages' })
    for await (const _ of stream) {
    }
    expect(ran).toEqual(['src/mian.r'])
  })
})

describe('behind shallotMiddleware', () => {
  it('answers invalid_tool_calls as invalid_arguments, so the model reads it and recovers', async () => {
    const { readFile, ran } = readFileTool()
    const model = new ScriptedChatModel([malformedTurn(), recoverIfTold, answer])
    const agent = createAgent({ model, tools: [readFile], middleware: [shallotMiddleware()] })
    const { messages } = await agent.invoke({ messages: [{ role: 'user', content: 'read main' }] })

    expect(ran).toEqual(['src/main.rs'])
    expect(lastText(messages)).toBe('read: fn main() {}')
    const [refused] = toolMessages(messages)
    expect(refused).toMatchObject({ tool_call_id: 'call_1', name: 'read_file', status: 'error' })
    expect(JSON.parse(String(refused?.content))).toMatchObject({
      error: 'invalid_arguments',
      message: expect.stringMatching(/^arguments are not valid JSON: /),
      hint: 'send the arguments as one JSON object',
    })
    // The transcript stays valid for any provider: the refused call has arguments {} and nothing is left invalid.
    expect(messages[1]).toMatchObject({ tool_calls: [{ id: 'call_1', name: 'read_file', args: {} }], invalid_tool_calls: [] })
  })

  it('never runs a streamed call whose JSON is incomplete', async () => {
    const { readFile, ran } = readFileTool()
    const model = new ScriptedChatModel([streamedTurn('call_1'), recoverIfTold, answer])
    const agent = createAgent({ model, tools: [readFile], middleware: [shallotMiddleware()] })
    const messages = await streamed(agent as never, { messages: [{ role: 'user', content: 'read main' }] })

    expect(ran).toEqual(['src/main.rs'])
    expect(JSON.parse(String(toolMessages(messages)[0]?.content)).error).toBe('invalid_arguments')
    expect(lastText(messages)).toBe('read: fn main() {}')
  })

  it('lets a complete streamed call run, and answers an invalid call with no name softly', async () => {
    const { readFile, ran } = readFileTool()
    const complete = [
      new AIMessageChunk({
        content: '',
        tool_call_chunks: [{ id: 'ok', name: 'read_file', args: '{"path":', index: 0, type: 'tool_call_chunk' }],
      }),
      new AIMessageChunk({ content: '', tool_call_chunks: [{ args: '"src/main.rs"}', index: 0, type: 'tool_call_chunk' }] }),
    ]
    const nameless = new AIMessage({ content: '', invalid_tool_calls: [{ id: 'x', args: '{', error: 'bad', type: 'invalid_tool_call' }] })
    const model = new ScriptedChatModel([complete, nameless, answer])
    const agent = createAgent({ model, tools: [readFile], middleware: [shallotMiddleware()] })
    const messages = await streamed(agent as never, { messages: [{ role: 'user', content: 'read main' }] })
    expect(ran).toEqual(['src/main.rs'])
    expect(toolMessages(messages).map((m) => JSON.parse(m.status === 'error' ? String(m.content) : '{"error":null}').error)).toEqual([
      null,
      'invalid_arguments',
    ])
  })

  it('counts malformed calls for stuck-loop: the same broken call is refused, then the run stops', async () => {
    const { readFile, ran } = readFileTool()
    const model = new ScriptedChatModel(Array.from({ length: 6 }, malformedTurn))
    const agent = createAgent({
      model,
      tools: [readFile],
      middleware: [shallotMiddleware({ middleware: [stuckLoop({ refuseAfter: 2, stopAfter: 4 })] })],
    })
    const invocation = agent.invoke({ messages: [{ role: 'user', content: 'read main' }] })
    await expect(invocation).rejects.toSatisfy((error: unknown) => loopErrorOf(error)?.kind === 'loop_detected')
    expect(ran).toEqual([])
    const codes = model.seen
      .at(-1)
      ?.filter((m) => ToolMessage.isInstance(m))
      .map((m) => JSON.parse(String(m.content)).error)
    expect(codes).toEqual(['invalid_arguments', 'invalid_arguments', 'repeated_failure'])
  })
})
