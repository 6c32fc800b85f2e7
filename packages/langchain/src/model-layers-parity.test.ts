// Issue 35, "the same failing model": LangChain's model calls go through the default model stack (modelCall's retry
// fields are its retry layer's), so they end as createAgent({ modelMiddleware }) ends with those layers:
// the same outcome, the same failure name, the same requests, the same wait for a server's retry-after-ms.
import { ChatAnthropic } from '@langchain/anthropic'
import { createAgent as createShallotAgent } from '@shallot/agent'
import { type LoopError, type ModelAdapter, ToolError } from '@shallot/core'
import { errorClassifier } from '@shallot/error-classifier'
import { retry } from '@shallot/retry'
import { type FakeProvider, type FakeStep, fakeProvider, type ManualClock, manualClock } from '@shallot/testing'
import { createAgent } from 'langchain'
import { afterEach, describe, expect, it } from 'vitest'
import { loopErrorOf, shallotMiddleware } from './index.js'

let provider: FakeProvider | undefined
afterEach(async () => {
  await provider?.close()
  provider = undefined
})

const RETRY = { maxAttempts: 3, baseMs: 1, capMs: 1 }
const API_KEY = 'sk-test-not-a-secret'

interface Ending {
  readonly status: 'completed' | 'stopped'
  readonly text?: string
  readonly kind?: string
  readonly lastFailure?: string | undefined
  readonly requests: number
}

function lastFailureOf(error: LoopError): string | undefined {
  const cause = error.cause
  if (ToolError.is(cause)) return cause.code
  const status = (cause as { status?: unknown } | undefined)?.status
  return typeof status === 'number' ? String(status) : undefined
}

/** The plainest adapter a user writes: fetch against Chat Completions, throwing the status and headers it got. */
function fetchAdapter(baseURL: string): ModelAdapter {
  return {
    name: 'gpt-4o',
    async generate(request) {
      const response = await fetch(`${baseURL}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${API_KEY}` },
        body: JSON.stringify({ model: 'gpt-4o', messages: request.messages.map((m) => ({ role: m.role, content: String(m.content) })) }),
        signal: request.signal,
      })
      const body = (await response.json()) as { choices?: Array<{ message?: { content?: string } }> }
      if (!response.ok) throw Object.assign(new Error(`HTTP ${response.status}`), { status: response.status, headers: response.headers })
      return { text: body.choices?.[0]?.message?.content ?? '', toolCalls: [] }
    },
  }
}

/** Runs `host` while advancing the manual clock in 1 ms steps until it settles (every wait is on that clock). */
async function driven<T>(clock: ManualClock, host: Promise<T>): Promise<T> {
  let settled: { ok: true; value: T } | { ok: false; error: unknown } | undefined
  host.then(
    (value) => {
      settled = { ok: true, value }
    },
    (error: unknown) => {
      settled = { ok: false, error }
    },
  )
  while (settled === undefined) {
    await new Promise((resolve) => setTimeout(resolve, 1))
    if (clock.pending > 0) await clock.advance(1)
  }
  if (!settled.ok) throw settled.error
  return settled.value
}

async function throughLayers(server: FakeProvider, clock: ManualClock): Promise<Ending> {
  const agent = createShallotAgent({
    model: fetchAdapter(server.openaiBaseURL),
    tools: [],
    clock,
    // The layers modelCall stands for. The classifier hands on the whole pushback (up to a day): with its default
    // clamp (60 s, the same figure as retry's model ceiling) a 600 s Retry-After would read as 60 s and be waited.
    modelMiddleware: [retry(RETRY), errorClassifier({ maxRetryAfterMs: 86_400_000 })],
  })
  const outcome = await driven(clock, agent.run({ input: 'hi' }))
  const requests = server.requests.length
  if (outcome.status === 'completed') return { status: 'completed', text: outcome.output, requests }
  if (outcome.status !== 'stopped') throw new Error('the run parked')
  return { status: 'stopped', kind: outcome.error.kind, lastFailure: lastFailureOf(outcome.error), requests }
}

async function throughLangChain(server: FakeProvider, clock: ManualClock): Promise<Ending> {
  const agent = createAgent({
    model: new ChatAnthropic({ model: 'claude-test', apiKey: API_KEY, anthropicApiUrl: server.url, maxRetries: 0 }),
    tools: [],
    middleware: [shallotMiddleware({ modelCall: RETRY, clock })],
  })
  try {
    const state = await driven(clock, agent.invoke({ messages: [{ role: 'user', content: 'hi' }] }))
    const last = state.messages.at(-1)
    return { status: 'completed', text: typeof last?.content === 'string' ? last.content : '', requests: server.requests.length }
  } catch (err) {
    const error = loopErrorOf(err)
    if (error === undefined) throw err
    return { status: 'stopped', kind: error.kind, lastFailure: lastFailureOf(error), requests: server.requests.length }
  }
}

/** Both hosts against a fresh server each; `gap` is the virtual time between the first two requests. */
async function both(script: FakeStep[], onEnd: 'fail' | 'repeat' = 'fail') {
  const run = async (host: (server: FakeProvider, clock: ManualClock) => Promise<Ending>) => {
    const clock = manualClock()
    provider = await fakeProvider({ script, onEnd, now: () => clock.now() })
    try {
      const ending = await host(provider, clock)
      const [first, second] = provider.requests
      return { ending, gap: (second?.at ?? 0) - (first?.at ?? 0) }
    } finally {
      await provider.close()
      provider = undefined
    }
  }
  return { layers: await run(throughLayers), langchain: await run(throughLangChain) }
}

describe('the same failing model: LangChain ends as the model layers end', () => {
  it('503, 503, an answer: both answer after three requests', async () => {
    const { layers, langchain } = await both([
      { fault: 'server_error', status: 503 },
      { fault: 'server_error', status: 503 },
      { text: 'ok' },
    ])
    expect(langchain.ending).toEqual(layers.ending)
    expect(langchain.ending).toEqual({ status: 'completed', text: 'ok', requests: 3 })
  })

  it('429 on every request: both stop as model_failed after three requests, the failure named rate_limited by the one classifier', async () => {
    const { layers, langchain } = await both([{ fault: 'rate_limit' }], 'repeat')
    expect(langchain.ending).toEqual(layers.ending)
    expect(langchain.ending).toEqual({ status: 'stopped', kind: 'model_failed', lastFailure: 'rate_limited', requests: 3 })
  })

  it('a 429 asking for 300 ms (retry-after-ms): both wait the 300 ms, max(backoff, Retry-After), then answer', async () => {
    const { layers, langchain } = await both([{ fault: 'rate_limit', retryAfterMs: 300 }, { text: 'ok' }])
    expect(langchain.ending).toEqual(layers.ending)
    expect(langchain.ending).toEqual({ status: 'completed', text: 'ok', requests: 2 })
    // Virtual time goes on in 1 ms steps while the second request is on its way, so a few ms may pass on arrival.
    for (const { gap } of [layers, langchain]) {
      expect(gap).toBeGreaterThanOrEqual(300)
      expect(gap).toBeLessThan(350)
    }
  })

  it('401: both end at once as user_input_required, without a retry', async () => {
    const { layers, langchain } = await both([{ fault: 'authentication' }], 'repeat')
    expect(langchain.ending).toEqual(layers.ending)
    expect(langchain.ending).toMatchObject({ status: 'stopped', kind: 'user_input_required', requests: 1 })
  })

  it('a Retry-After of 600 s: both give up at once rather than repeat sooner than asked', async () => {
    const { layers, langchain } = await both([{ fault: 'rate_limit', retryAfterSeconds: 600 }, { text: 'ok' }])
    expect(langchain.ending).toEqual(layers.ending)
    expect(langchain.ending).toMatchObject({ status: 'stopped', kind: 'model_failed', requests: 1 })
  })
})
