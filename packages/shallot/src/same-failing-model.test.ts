// One failing model, every host: createAgent with a plain adapter and the default model stack
// (`modelMiddleware: defaultModelMiddleware()`), the same adapter through the retry and error-classifier layers as
// a config file builds them, createAgent with the AI SDK adapter (aiSdkModel), and LangChain's createAgent with
// shallotMiddleware (whose default model stack is the same defaultModelMiddleware()). Every host asks the same local
// server (fakeProvider: OpenAI Chat Completions for the first three, Anthropic Messages for LangChain's ChatAnthropic,
// one script), each with 3 attempts per model call and a 1 ms backoff, its SDK's own retries off. What each host
// ends with, and how many requests reached the server, is pinned here; where they differ, the test says how.
import { readFileSync, realpathSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { createOpenAI } from '@ai-sdk/openai'
import { aiSdkModel } from '@shallot/ai-sdk'
import type { ModelMiddleware } from '@shallot/core'
import { errorClassifierDefinition } from '@shallot/error-classifier'
import { retryDefinition } from '@shallot/retry'
import { type FakeProvider, type FakeStep, fakeProvider } from '@shallot/testing'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createAgent, defaultModelMiddleware, type LoopError, type ModelAdapter, ToolError } from './index.js'

// LangChain is not a dependency of this package: adding it here makes pnpm resolve @langchain/core in a second peer
// variant, and @shallot/langchain's own tests then see two copies of LangGraph. So LangChain is loaded as
// @shallot/langchain loads it: its source, and the ESM entries of the packages installed in its folder.
const LANGCHAIN_DIR = fileURLToPath(new URL('../../langchain/', import.meta.url))

async function fromLangChainFolder(name: string): Promise<unknown> {
  const dir = realpathSync(join(LANGCHAIN_DIR, 'node_modules', ...name.split('/')))
  const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { exports: { '.': { import: { default: string } } } }
  return import(pathToFileURL(join(dir, manifest.exports['.'].import.default)).href)
}

interface LangChain {
  createAgent(options: { model: unknown; tools: unknown[]; middleware: unknown[] }): {
    invoke(input: { messages: Array<{ role: string; content: string }> }): Promise<{ messages: Array<{ content: unknown }> }>
  }
  ChatAnthropic: new (options: Record<string, unknown>) => unknown
  shallotMiddleware(options: Record<string, unknown>): unknown
  loopErrorOf(error: unknown): LoopError | undefined
}

async function langChain(): Promise<LangChain> {
  const source = join(LANGCHAIN_DIR, 'src', 'index.ts')
  const [{ createAgent }, { ChatAnthropic }, { shallotMiddleware, loopErrorOf }] = (await Promise.all([
    fromLangChainFolder('langchain'),
    fromLangChainFolder('@langchain/anthropic'),
    import(/* @vite-ignore */ pathToFileURL(source).href),
  ])) as [Pick<LangChain, 'createAgent'>, Pick<LangChain, 'ChatAnthropic'>, Pick<LangChain, 'shallotMiddleware' | 'loopErrorOf'>]
  return { createAgent, ChatAnthropic, shallotMiddleware, loopErrorOf }
}

let provider: FakeProvider | undefined
afterEach(async () => {
  await provider?.close()
  provider = undefined
})

const RETRY = { maxAttempts: 3, baseMs: 1, capMs: 1 }
const API_KEY = 'sk-test-not-a-secret'

/** What a host ended with, in words all three share. */
interface Ending {
  readonly status: 'completed' | 'stopped'
  readonly text?: string
  /** The LoopError kind the run ended with. */
  readonly kind?: string
  /** The code of the last failure, as the host classified it (a ToolError's code), or the HTTP status it carried. */
  readonly lastFailure?: string | undefined
  /** Requests that reached the server. */
  readonly requests: number
}

/** The plainest adapter a user writes: fetch against Chat Completions, throwing the status it got, as an SDK does. */
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

function lastFailureOf(error: LoopError): string | undefined {
  const cause = error.cause
  if (ToolError.is(cause)) return cause.code
  const status = (cause as { status?: unknown } | undefined)?.status
  return typeof status === 'number' ? String(status) : undefined
}

async function throughCreateAgent(
  model: ModelAdapter,
  server: FakeProvider,
  modelMiddleware: ModelMiddleware[] = defaultModelMiddleware({ retry: RETRY }),
): Promise<Ending> {
  const agent = createAgent({ model, tools: [], modelMiddleware })
  const outcome = await agent.run({ input: 'hi' })
  const requests = server.requests.length
  if (outcome.status === 'completed') return { status: 'completed', text: outcome.output, requests }
  if (outcome.status !== 'stopped') throw new Error('the run parked, which no model failure here should do')
  return { status: 'stopped', kind: outcome.error.kind, lastFailure: lastFailureOf(outcome.error), requests }
}

// LangChain and its Anthropic client take seconds to load on a busy machine: once, in beforeAll, off the tests' clocks.
let loaded: LangChain | undefined
beforeAll(async () => {
  loaded = await langChain()
}, 60_000)

async function throughLangChain(server: FakeProvider): Promise<Ending> {
  if (loaded === undefined) throw new Error('LangChain did not load')
  const { createAgent: createLangChainAgent, ChatAnthropic, shallotMiddleware, loopErrorOf } = loaded
  const agent = createLangChainAgent({
    model: new ChatAnthropic({ model: 'claude-test', apiKey: API_KEY, anthropicApiUrl: server.url, maxRetries: 0 }),
    tools: [],
    middleware: [shallotMiddleware({ modelCall: RETRY })],
  })
  try {
    const state = await agent.invoke({ messages: [{ role: 'user', content: 'hi' }] })
    const last = state.messages.at(-1)
    return {
      status: 'completed',
      text: typeof last?.content === 'string' ? last.content : JSON.stringify(last?.content),
      requests: server.requests.length,
    }
  } catch (err) {
    const error = loopErrorOf(err)
    if (error === undefined) throw err
    return { status: 'stopped', kind: error.kind, lastFailure: lastFailureOf(error), requests: server.requests.length }
  }
}

type Host = 'createAgent' | 'modelOnion' | 'aiSdkModel' | 'langchain'

/** Runs `script` through every host, each against a fresh server; `seen` reads that server's requests afterwards. */
async function allThree(
  script: FakeStep[],
  onEnd: 'fail' | 'repeat' = 'fail',
  seen: (host: Host, server: FakeProvider) => void = () => {},
): Promise<Record<Host, Ending>> {
  const run = async (name: Host, host: (server: FakeProvider) => Promise<Ending>) => {
    provider = await fakeProvider({ script, onEnd })
    try {
      const ending = await host(provider)
      seen(name, provider)
      return ending
    } finally {
      await provider.close()
      provider = undefined
    }
  }
  return {
    createAgent: await run('createAgent', (server) => throughCreateAgent(fetchAdapter(server.openaiBaseURL), server)),
    // The same plain adapter through the layers as a config file builds them: retry outside the error classifier.
    modelOnion: await run('modelOnion', (server) =>
      throughCreateAgent(fetchAdapter(server.openaiBaseURL), server, [
        retryDefinition.buildModel(RETRY),
        errorClassifierDefinition.buildModel({}),
      ]),
    ),
    aiSdkModel: await run('aiSdkModel', (server) =>
      throughCreateAgent(aiSdkModel(createOpenAI({ apiKey: API_KEY, baseURL: server.openaiBaseURL }).chat('gpt-4o')), server),
    ),
    langchain: await run('langchain', throughLangChain),
  }
}

/** How each host ended, in the words all share: status, LoopError kind, requests that reached the server. */
const kindsOf = (endings: Record<Host, Ending>) =>
  Object.fromEntries(Object.entries(endings).map(([host, e]) => [host, [e.status, e.kind, e.requests]]))

// Real servers and three SDKs' first requests: seconds on a busy two-core machine, so no test here races vitest's 5 s.
describe('the same failing model through createAgent, aiSdkModel and LangChain', { timeout: 30_000 }, () => {
  it('503 three times, then an answer: all stop as model_failed after the same three requests', async () => {
    const unavailable: FakeStep = { fault: 'server_error', status: 503 }
    const endings = await allThree([unavailable, unavailable, unavailable, { text: 'never read' }])
    const same = ['stopped', 'model_failed', 3]
    expect(kindsOf(endings)).toEqual({ createAgent: same, modelOnion: same, aiSdkModel: same, langchain: same })
  })

  it('a 401: all stop at once as user_input_required, after one request', async () => {
    const endings = await allThree([{ fault: 'authentication' }, { text: 'never read' }])
    const same = ['stopped', 'user_input_required', 1]
    expect(kindsOf(endings)).toEqual({ createAgent: same, modelOnion: same, aiSdkModel: same, langchain: same })
  })

  it('503 twice, then an answer: all three answer, after the same three requests', async () => {
    const endings = await allThree([{ fault: 'server_error', status: 503 }, { fault: 'server_error', status: 503 }, { text: 'the answer' }])
    const same: Ending = { status: 'completed', text: 'the answer', requests: 3 }
    expect(endings).toEqual({ createAgent: same, modelOnion: same, aiSdkModel: same, langchain: same })
  })

  it('429 on every request: all three stop as model_failed after three requests, the failure classified as rate_limited', async () => {
    const endings = await allThree([{ fault: 'rate_limit' }], 'repeat')
    expect(endings).toEqual({
      // The default model stack's error classifier names it.
      createAgent: { status: 'stopped', kind: 'model_failed', lastFailure: 'rate_limited', requests: 3 },
      // Through the onion the error classifier names it, as the AI SDK adapter does.
      modelOnion: { status: 'stopped', kind: 'model_failed', lastFailure: 'rate_limited', requests: 3 },
      // aiSdkModel classifies the 429 into a rate_limited ToolError before core sees it.
      aiSdkModel: { status: 'stopped', kind: 'model_failed', lastFailure: 'rate_limited', requests: 3 },
      // shallotMiddleware runs the model layers too (decision 525): its error classifier names it.
      langchain: { status: 'stopped', kind: 'model_failed', lastFailure: 'rate_limited', requests: 3 },
    })
  })

  it('a 429 asking for 300 ms (retry-after-ms), then an answer: all answer, none sooner than asked', async () => {
    const gaps: Partial<Record<Host, number>> = {}
    const script: FakeStep[] = [{ fault: 'rate_limit', retryAfterMs: 300 }, { text: 'the answer' }]
    const endings = await allThree(script, 'fail', (host, server) => {
      const [first, second] = server.requests
      gaps[host] = (second?.receivedAt ?? 0) - (first?.receivedAt ?? 0)
    })
    const same: Ending = { status: 'completed', text: 'the answer', requests: 2 }
    expect(endings).toEqual({ createAgent: same, modelOnion: same, aiSdkModel: same, langchain: same })
    // The error classifier (in the default model stack), aiSdkModel and shallotMiddleware read the header: no second
    // request sooner than asked.
    for (const host of ['createAgent', 'modelOnion', 'aiSdkModel', 'langchain'] as const)
      expect(gaps[host], host).toBeGreaterThanOrEqual(295)
  })
})
