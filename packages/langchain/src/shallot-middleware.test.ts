import { AIMessage, type BaseMessage, ToolMessage } from '@langchain/core/messages'
import { fakeModel } from '@langchain/core/testing'
import { circuitBreaker, consecutive } from '@shallot/circuit-breaker'
import { LoopError, type Middleware, ToolError } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { createAgent, tool } from 'langchain'
import { defaultMiddleware } from 'shallot'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { getShallotCall, loopErrorOf, shallotMiddleware } from './index.js'

const lastMessage = (messages: BaseMessage[]) => messages.at(-1)
const toolMessages = (messages: BaseMessage[]) => messages.filter((m): m is ToolMessage => ToolMessage.isInstance(m))
const callTools = (...calls: Array<{ name: string; args: Record<string, unknown> }>) =>
  new AIMessage({
    content: '',
    tool_calls: calls.map((c, i) => ({ ...c, id: `call_${c.name}_${i}_${Math.random()}`, type: 'tool_call' as const })),
  })

function projectFiles(files: Record<string, string>) {
  const asked: string[] = []
  const readFile = tool(
    async ({ path }) => {
      asked.push(path)
      const text = files[path]
      if (text === undefined)
        throw new ToolError('not_found', `file ${path} not found`, { hint: `files: ${Object.keys(files).join(', ')}` })
      return text
    },
    { name: 'read_file', description: 'Read a UTF-8 text file from the project', schema: z.object({ path: z.string().min(1) }) },
  )
  return { readFile, asked }
}

describe('shallotMiddleware in a real createAgent loop, driven by LangChain’s fake tool-calling model', () => {
  it('lets the model read a soft not_found for src/mian.rs and recover with src/main.rs', async () => {
    const { readFile, asked } = projectFiles({ 'src/main.rs': 'fn main() { println!("hello") }' })
    const model = fakeModel()
      .respondWithTools([{ name: 'read_file', args: { path: 'src/mian.rs' } }])
      .respond((messages) => {
        const last = lastMessage(messages)
        return ToolMessage.isInstance(last) && last.status === 'error' && String(last.content).includes('not_found')
          ? callTools({ name: 'read_file', args: { path: 'src/main.rs' } })
          : new AIMessage('gave up')
      })
      .respond((messages) => new AIMessage(`main.rs says: ${String(lastMessage(messages)?.content)}`))
    const agent = createAgent({ model, tools: [readFile], middleware: [shallotMiddleware({ effects: { read_file: 'read' } })] })

    const { messages } = await agent.invoke({ messages: [{ role: 'user', content: 'What does src/main.rs do?' }] })

    expect(asked).toEqual(['src/mian.rs', 'src/main.rs'])
    expect(lastMessage(messages)?.content).toBe('main.rs says: fn main() { println!("hello") }')
    const [soft, ok] = toolMessages(messages)
    expect(soft).toMatchObject({
      status: 'error',
      name: 'read_file',
      content: '{"error":"not_found","message":"file src/mian.rs not found","hint":"files: src/main.rs"}',
    })
    expect(ok?.status).toBe('success')
  })

  it('opens the circuit after two failures: the third call gets circuit_open without the tool running', async () => {
    let runs = 0
    const status = tool(
      async (): Promise<string> => {
        runs++
        throw new ToolError('upstream_error', 'deploy service answered HTTP 503')
      },
      { name: 'deploy_status', description: 'Status of the deploy service', schema: z.object({}) },
    )
    const model = fakeModel()
      .respondWithTools([{ name: 'deploy_status', args: {} }])
      .respondWithTools([{ name: 'deploy_status', args: {} }])
      .respondWithTools([{ name: 'deploy_status', args: {} }])
      .respond(new AIMessage('The deploy service is down.'))
    const layers = shallotMiddleware({ middleware: [circuitBreaker({ policy: consecutive({ threshold: 2 }) })], clock: manualClock() })
    const agent = createAgent({ model, tools: [status], middleware: [layers] })

    const { messages } = await agent.invoke({ messages: [{ role: 'user', content: 'Is the deploy healthy?' }] })

    expect(runs).toBe(2)
    expect(toolMessages(messages).map((m) => JSON.parse(String(m.content)).error)).toEqual([
      'upstream_error',
      'upstream_error',
      'circuit_open',
    ])
    expect(String(toolMessages(messages)[2]?.content)).toContain('temporarily unavailable: circuit breaker open')
  })

  it('answers invalid arguments and unknown tools softly, before any tool runs', async () => {
    const { readFile, asked } = projectFiles({ 'a.txt': 'A' })
    const model = fakeModel()
      .respondWithTools([{ name: 'read_file', args: { file: 'a.txt' } }])
      .respondWithTools([{ name: 'read_fiel', args: { path: 'a.txt' } }])
      .respond(new AIMessage('done'))
    const agent = createAgent({ model, tools: [readFile], middleware: [shallotMiddleware()] })
    const { messages } = await agent.invoke({ messages: [{ role: 'user', content: 'read a.txt' }] })
    const [invalid, unknown] = toolMessages(messages).map((m) => JSON.parse(String(m.content)))
    expect(invalid).toMatchObject({ error: 'invalid_arguments', hint: 'expected { path: string }' })
    expect(unknown).toMatchObject({
      error: 'unknown_tool',
      message: "Tool not found: read_fiel. Available: read_file. Did you mean 'read_file'?",
    })
    expect(asked).toEqual([])
  })

  it('forwards one idempotency key per logical call to the tool (getShallotCall()): a retried charge sends the same key', async () => {
    const calls: Array<[string | undefined, number | undefined]> = []
    const charge = tool(
      async ({ cents }) => {
        const call = getShallotCall()
        calls.push([call?.idempotencyKey, call?.attempt])
        if (calls.length === 1) throw Object.assign(new Error('HTTP 503'), { status: 503 })
        return `charged ${cents}`
      },
      { name: 'charge', description: 'Charge a card', schema: z.object({ cents: z.number() }) },
    )
    const model = fakeModel()
      .respondWithTools([{ name: 'charge', args: { cents: 500 } }])
      .respond((messages: BaseMessage[]) => new AIMessage(String(lastMessage(messages)?.content)))
    const middleware = defaultMiddleware({ retry: { baseMs: 0, capMs: 0 } })
    const agent = createAgent({
      model,
      tools: [charge],
      middleware: [shallotMiddleware({ middleware, effects: { charge: 'idempotent' } })],
    })
    const { messages } = await agent.invoke({ messages: [{ role: 'user', content: 'charge 5 dollars' }] })
    expect(lastMessage(messages)?.content).toBe('charged 500')
    const key = calls[0]?.[0]
    expect(key).toBeTypeOf('string')
    expect(calls).toEqual([
      [key, 1],
      [key, 2],
    ])
    expect(getShallotCall()).toBeUndefined()
  })

  it('hands a replayed result back under the current tool call id', async () => {
    const { readFile } = projectFiles({ 'a.txt': 'A' })
    const earlier = new ToolMessage({ content: 'A (from the store)', tool_call_id: 'an_earlier_call', name: 'read_file' })
    const replay: Middleware = async function replay(ctx) {
      ctx.result = { value: earlier, replayed: true }
    }
    const model = fakeModel()
      .respondWithTools([{ name: 'read_file', args: { path: 'a.txt' }, id: 'call_now' }])
      .respond(new AIMessage('done'))
    const agent = createAgent({ model, tools: [readFile], middleware: [shallotMiddleware({ middleware: [replay] })] })
    const { messages } = await agent.invoke({ messages: [{ role: 'user', content: 'read a.txt' }] })
    expect(toolMessages(messages)[0]).toMatchObject({ tool_call_id: 'call_now', content: 'A (from the store)' })
  })
  it("stops waiting for a tool when a layer's deadline aborts the call, and the model reads the soft timeout", async () => {
    let started = () => {}
    const running = new Promise<void>((resolve) => {
      started = resolve
    })
    const stuck = tool(
      () => {
        started()
        return new Promise<string>(() => {})
      },
      { name: 'stuck', description: 'Hangs and ignores every signal', schema: z.object({}) },
    )
    const deadline: Middleware = async function deadline(ctx, next) {
      const controller = new AbortController()
      ctx.signal = controller.signal
      const pending = next()
      await running
      controller.abort(new ToolError('timeout', 'stuck timed out after 5s'))
      return pending
    }
    const model = fakeModel()
      .respondWithTools([{ name: 'stuck', args: {} }])
      .respond(new AIMessage('it hangs'))
    const agent = createAgent({ model, tools: [stuck], middleware: [shallotMiddleware({ middleware: [deadline] })] })
    const { messages } = await agent.invoke({ messages: [{ role: 'user', content: 'try stuck' }] })
    expect(toolMessages(messages)[0]).toMatchObject({
      status: 'error',
      content: '{"error":"timeout","message":"stuck timed out after 5s"}',
    })
  })
})

describe('hard errors stop the agent', () => {
  it('rejects invoke with the LoopError (wrapped by LangChain) and asks the model nothing more', async () => {
    const { readFile } = projectFiles({ 'a.txt': 'A' })
    const model = fakeModel()
      .respondWithTools([{ name: 'read_file', args: { path: 'a.txt' } }])
      .respondWithTools([{ name: 'read_file', args: { path: 'a.txt' } }])
      .respond(new AIMessage('never reached'))
    const agent = createAgent({ model, tools: [readFile], middleware: [shallotMiddleware({ limits: { maxSteps: 1 } })] })

    const invocation = agent.invoke({ messages: [{ role: 'user', content: 'read a.txt twice' }] })

    await expect(invocation).rejects.toSatisfy((error: unknown) => loopErrorOf(error)?.kind === 'budget_exhausted')
    expect(model.callCount).toBe(2)
  })

  it('cancels the sibling calls of the turn instead of waiting for them', async () => {
    let released = false
    const slow = tool(() => new Promise<string>(() => {}), { name: 'slow', description: 'Never finishes', schema: z.object({}) })
    const deleteAll = tool(async () => 'deleted', { name: 'delete_all', description: 'Deletes everything', schema: z.object({}) })
    const refuseDeleteAll: Middleware = async function refuseDeleteAll(ctx, next) {
      if (ctx.call.name === 'delete_all') {
        await Promise.resolve()
        throw new LoopError('fatal', 'delete_all is never allowed here')
      }
      try {
        return await next()
      } finally {
        released = true
      }
    }
    const model = fakeModel()
      .respond(callTools({ name: 'slow', args: {} }, { name: 'delete_all', args: {} }))
      .respond(new AIMessage('never reached'))
    const agent = createAgent({ model, tools: [slow, deleteAll], middleware: [shallotMiddleware({ middleware: [refuseDeleteAll] })] })

    const invocation = agent.invoke({ messages: [{ role: 'user', content: 'clean up' }] })

    await expect(invocation).rejects.toSatisfy((error: unknown) => loopErrorOf(error)?.kind === 'fatal')
    expect(released).toBe(true)
  })

  it('keeps one run per thread: each thread has its own step budget', async () => {
    const { readFile, asked } = projectFiles({ 'a.txt': 'A' })
    const layers = shallotMiddleware({ maxSteps: 1 }) // the deprecated spelling still works
    const ask = (thread: string) => {
      const model = fakeModel()
        .respondWithTools([{ name: 'read_file', args: { path: 'a.txt' } }])
        .respond(new AIMessage('done'))
      const agent = createAgent({ model, tools: [readFile], middleware: [layers] })
      return agent.invoke({ messages: [{ role: 'user', content: 'read a.txt' }] }, { configurable: { thread_id: thread } })
    }
    await ask('thread-a')
    await ask('thread-b')
    await expect(ask('thread-a')).rejects.toSatisfy((error: unknown) => loopErrorOf(error)?.kind === 'budget_exhausted')
    expect(asked).toEqual(['a.txt', 'a.txt'])
  })
})
