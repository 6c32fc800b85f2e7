// shallotMiddleware({ modelMiddleware }): LangChain's model calls take a model stack as createAgent({ modelMiddleware })
// does — the layers decide, a third party's layer wraps every attempt, modelCall's retry fields are refused beside it.
import { ChatAnthropic } from '@langchain/anthropic'
import { circuitBreaker } from '@shallot/circuit-breaker'
import { type ModelMiddleware, OptionsError } from '@shallot/core'
import { errorClassifier } from '@shallot/error-classifier'
import { retry } from '@shallot/retry'
import { manualClock } from '@shallot/testing'
import { createAgent } from 'langchain'
import { afterEach, describe, expect, it } from 'vitest'
import { type AnthropicServer, anthropicServer, type Reply } from './anthropic-server.test-helper.js'
import { loopErrorOf, shallotMiddleware } from './index.js'

let server: AnthropicServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

const claude = (url: string) => new ChatAnthropic({ model: 'claude-test', apiKey: 'sk-ant-test', anthropicApiUrl: url, maxRetries: 0 })
const ask = { messages: [{ role: 'user', content: 'hi' }] }
const done: Reply = { reply: 'message', content: [{ type: 'text', text: 'done' }] }
const overloaded: Reply = { reply: 'error', status: 529, type: 'overloaded_error' }

async function settle(invocation: Promise<{ messages: Array<{ text?: string }> }>) {
  try {
    const { messages } = await invocation
    return { text: messages.at(-1)?.text }
  } catch (error) {
    return { error: loopErrorOf(error) ?? error }
  }
}

describe('shallotMiddleware({ modelMiddleware })', () => {
  it('runs every model call through the given layers: a third-party layer sees each attempt, retry repeats the failure', async () => {
    server = await anthropicServer([overloaded, overloaded, done])
    const seen: string[] = []
    const tracing: ModelMiddleware = async (ctx, next) => {
      seen.push(`${ctx.model.name} attempt ${ctx.attempt}`)
      await next()
    }
    const agent = createAgent({
      model: claude(server.url),
      tools: [],
      middleware: [
        shallotMiddleware({
          modelMiddleware: [retry({ maxAttempts: 3, baseMs: 0, capMs: 0 }), tracing, errorClassifier()],
          clock: manualClock(),
        }),
      ],
    })
    expect(await settle(agent.invoke(ask))).toEqual({ text: 'done' })
    expect(seen).toEqual(['claude-test attempt 1', 'claude-test attempt 2', 'claude-test attempt 3'])
    expect(server.requests).toHaveLength(3)
  })

  it('with no retry layer listed nothing is repeated: the layers decide, not modelCall', async () => {
    server = await anthropicServer([overloaded, done])
    const agent = createAgent({
      model: claude(server.url),
      tools: [],
      middleware: [shallotMiddleware({ modelMiddleware: errorClassifier(), clock: manualClock() })],
    })
    const outcome = await settle(agent.invoke(ask))
    expect(outcome.error).toMatchObject({
      kind: 'model_failed',
      message: expect.stringMatching(/^the model call failed after 1 attempt: /),
    })
    expect(server.requests).toHaveLength(1)
  })

  it('refuses modelCall retry fields beside it, naming each: two retry loops would nest', () => {
    expect(() => shallotMiddleware({ modelMiddleware: [retry()], modelCall: { maxAttempts: 5, capMs: 100, timeoutMs: 5000 } })).toThrow(
      OptionsError,
    )
    expect(() => shallotMiddleware({ modelMiddleware: [retry()], modelCall: { maxAttempts: 5 } })).toThrow(
      /modelCall\.maxAttempts: belongs to the retry layer/,
    )
    expect(() => shallotMiddleware({ modelMiddleware: [retry()], modelCall: { timeoutMs: 5000 } })).not.toThrow()
  })

  it('takes a layer as it takes a model middleware: its model side', () => {
    expect(() => shallotMiddleware({ modelMiddleware: [circuitBreaker(), retry()] })).not.toThrow()
    expect(() => shallotMiddleware({ modelMiddleware: circuitBreaker() })).not.toThrow()
  })

  it.each([[42], ['retry'], [[retry(), null]], [{ next: () => {} }], [{ name: 'audit', wrapToolCall: async () => {} }]])(
    'refuses %j as modelMiddleware',
    (bad) => {
      expect(() => shallotMiddleware({ modelMiddleware: bad as never })).toThrow(/modelMiddleware: must be a layer with a model side/)
    },
  )

  it('a layer that swaps ctx.model for one LangChain cannot ask ends the call saying what to use instead, asking nothing', async () => {
    server = await anthropicServer([done])
    const swap: ModelMiddleware = async (ctx, next) => {
      ctx.model = { name: 'spare', adapter: { generate: async () => ({ text: 'spare' }) } }
      await next()
    }
    const agent = createAgent({ model: claude(server.url), tools: [], middleware: [shallotMiddleware({ modelMiddleware: [swap] })] })
    const outcome = await settle(agent.invoke(ask))
    expect(outcome.error).toMatchObject({ kind: 'model_failed', message: expect.stringContaining('not a LangChain chat model') })
    expect(server.requests).toHaveLength(0)
  })

  it('a layer that answers without next() is model_failed naming the fix', async () => {
    server = await anthropicServer([done])
    const silent: ModelMiddleware = async () => {}
    const agent = createAgent({ model: claude(server.url), tools: [], middleware: [shallotMiddleware({ modelMiddleware: silent })] })
    const outcome = await settle(agent.invoke(ask))
    expect(outcome.error).toMatchObject({ kind: 'model_failed', details: { fix: 'call `await next()` in every model middleware' } })
  })
})

describe('shallotMiddleware() without modelMiddleware: the default model stack, defaultModelMiddleware()', () => {
  it('keeps a breaker per model, as createAgent({ modelMiddleware: defaultModelMiddleware() }) does: three failed calls open it', async () => {
    server = await anthropicServer([overloaded])
    const agent = createAgent({
      model: claude(server.url),
      tools: [],
      middleware: [shallotMiddleware({ modelCall: { maxAttempts: 1 }, clock: manualClock() })],
    })
    for (let i = 1; i <= 3; i++) {
      expect((await settle(agent.invoke(ask))).error).toMatchObject({ kind: 'model_failed' })
      expect(server.requests).toHaveLength(i)
    }
    const fourth = await settle(agent.invoke(ask))
    expect(fourth.error).toMatchObject({ kind: 'model_failed', message: expect.stringMatching(/circuit/) })
    expect(server.requests).toHaveLength(3)
  })

  it('gives modelCall’s retry fields to its retry layer: maxAttempts 2 repeats a 529 once', async () => {
    server = await anthropicServer([overloaded, overloaded, done])
    const agent = createAgent({
      model: claude(server.url),
      tools: [],
      middleware: [shallotMiddleware({ modelCall: { maxAttempts: 2, baseMs: 0, capMs: 0 }, clock: manualClock() })],
    })
    expect((await settle(agent.invoke(ask))).error).toMatchObject({
      kind: 'model_failed',
      message: expect.stringMatching(/^the model call failed after 2 attempts: /),
    })
    expect(server.requests).toHaveLength(2)
  })
})
