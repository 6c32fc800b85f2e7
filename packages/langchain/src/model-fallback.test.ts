// A fallback chain of LangChain chat models inside shallotMiddleware: fallback({ models }) lists the chat models a
// LangChain user already has (spareModel names each), and the chain composes with the breaker per model of the default
// model stack, as under createAgent({ modelMiddleware }). Real ChatAnthropic models over the local wire-format fake provider.
import { ChatAnthropic } from '@langchain/anthropic'
import { type ModelEvent, OptionsError } from '@shallot/core'
import { type FakeProvider, type FakeStep, fakeProvider, manualClock } from '@shallot/testing'
import { createAgent } from 'langchain'
import { defaultModelMiddleware, fallback } from 'shallot'
import { afterEach, describe, expect, it } from 'vitest'
import { loopErrorOf, shallotMiddleware, spareModel } from './index.js'

let provider: FakeProvider | undefined
afterEach(async () => {
  await provider?.close()
  provider = undefined
})

const claude = (server: FakeProvider, model: string) =>
  new ChatAnthropic({ model, apiKey: 'sk-ant-test', anthropicApiUrl: server.url, maxRetries: 0 })
const ask = { messages: [{ role: 'user', content: 'hi' }] }

/** The primary is overloaded for as long as `down()` says; every other model answers with its name. */
const byModel =
  (down: () => boolean): FakeStep =>
  (request) =>
    request.model === 'claude-primary' && down() ? { fault: 'overloaded' } : { text: `from ${request.model}` }

async function answerOf(invocation: Promise<{ messages: Array<{ text?: string }> }>) {
  try {
    return (await invocation).messages.at(-1)?.text
  } catch (error) {
    return loopErrorOf(error) ?? error
  }
}

describe('shallotMiddleware with fallback({ models }) of LangChain chat models', { timeout: 20_000 }, () => {
  it("answers from the spare when the agent's model stays down, with a model.fallback event naming it", async () => {
    provider = await fakeProvider({ script: [byModel(() => true)], onEnd: 'repeat' })
    const events: ModelEvent[] = []
    const spare = spareModel(claude(provider, 'claude-spare'))
    const agent = createAgent({
      model: claude(provider, 'claude-primary'),
      tools: [],
      middleware: [
        shallotMiddleware({
          modelMiddleware: [fallback({ models: [spare] }), ...defaultModelMiddleware({ retry: { baseMs: 0, capMs: 0 } })],
          onModelEvent: (event) => events.push(event),
          clock: manualClock(),
        }),
      ],
    })
    expect(await answerOf(agent.invoke(ask))).toBe('from claude-spare')
    expect(provider.requests.map((r) => r.model)).toEqual(['claude-primary', 'claude-primary', 'claude-primary', 'claude-spare'])
    expect(events.filter((e) => e.type === 'model.fallback')).toMatchObject([{ from: 'claude-primary', to: 'claude-spare' }])
  })

  it("composes with the breaker per model: once the primary's circuit is open, calls go to the spare without asking it", async () => {
    provider = await fakeProvider({ script: [byModel(() => true)], onEnd: 'repeat' })
    const agent = createAgent({
      model: claude(provider, 'claude-primary'),
      tools: [],
      middleware: [
        shallotMiddleware({
          modelMiddleware: [
            fallback({ models: [spareModel(claude(provider, 'claude-spare'))] }),
            ...defaultModelMiddleware({ retry: false }),
          ],
          clock: manualClock(),
        }),
      ],
    })
    for (let i = 0; i < 3; i++) expect(await answerOf(agent.invoke(ask))).toBe('from claude-spare')
    const before = provider.requests.length
    expect(await answerOf(agent.invoke(ask))).toBe('from claude-spare')
    expect(provider.requests.slice(before).map((r) => r.model)).toEqual(['claude-spare'])
  })

  it('ends as fallback_exhausted, naming each model, when the spare is down too', async () => {
    provider = await fakeProvider({ script: [{ fault: 'overloaded' }], onEnd: 'repeat' })
    const agent = createAgent({
      model: claude(provider, 'claude-primary'),
      tools: [],
      middleware: [
        shallotMiddleware({
          modelMiddleware: [
            fallback({ models: [spareModel(claude(provider, 'claude-spare'))] }),
            ...defaultModelMiddleware({ retry: false }),
          ],
          clock: manualClock(),
        }),
      ],
    })
    const failure = await answerOf(agent.invoke(ask))
    expect(failure).toMatchObject({ kind: 'fallback_exhausted' })
    expect(provider.requests).toHaveLength(2)
  })

  it('refuses a listener that is not a function, and a spare that is not a chat model', () => {
    expect(() => shallotMiddleware({ onModelEvent: 'log' as never })).toThrow(OptionsError)
    expect(() => spareModel('claude-spare')).toThrow(/LangChain chat model/)
  })
})
