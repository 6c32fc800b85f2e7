// One failing model, every host: createAgent with a plain adapter and the default model stack
// (`modelMiddleware: defaultModelMiddleware()`), the same adapter through the retry and error-classifier layers as
// a config file builds them, createAgent with the AI SDK adapter (aiSdkModel), LangChain's createAgent with
// shallotMiddleware, and an OpenAI Agents SDK run() on shallotModel (both of whose default model stack is the same
// defaultModelMiddleware()). Every host asks the same local server (fakeProvider: OpenAI Chat Completions for the
// createAgent rows and OpenAI Agents, Anthropic Messages for LangChain's ChatAnthropic, one script), each with 3
// attempts per model call and a 1 ms backoff, its SDK's own retries off (the OpenAI Agents row keeps the `openai`
// client's default two: shallotModel turns them off per request). Then the same faulted model with a faulted tool
// through createAgent, LangChain and OpenAI Agents, each with defaultMiddleware() in front of the tool. What each host
// ends with, how many requests reached the server and how often the tool ran are pinned here; where they differ, the
// test says how. Every wait is on a manual clock.
import { readFileSync, realpathSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import type { ModelMiddleware } from '@shallot/core'
import { errorClassifierDefinition } from '@shallot/error-classifier'
import { retryDefinition } from '@shallot/retry'
import { type FakeProvider, type FakeStep, fakeProvider, type ManualClock, manualClock } from '@shallot/testing'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createAgent, defaultMiddleware, defaultModelMiddleware, defineTool, LoopError, type ModelAdapter, ToolError } from './index.js'

// LangChain is not a dependency of this package: adding it here makes pnpm resolve @langchain/core in a second peer
// variant, and @shallot/langchain's own tests then see two copies of LangGraph. So LangChain is loaded as
// @shallot/langchain loads it: its source, and the ESM entries of the packages installed in its folder. The OpenAI
// Agents SDK is loaded the same way from @shallot/openai-agents (which depends on this package).
const LANGCHAIN_DIR = fileURLToPath(new URL('../../langchain/', import.meta.url))
// @shallot/ai-sdk depends on this package (its default model stack): loaded from its folder too, so no cycle.
const AI_SDK_DIR = fileURLToPath(new URL('../../ai-sdk/', import.meta.url))
const OPENAI_AGENTS_DIR = fileURLToPath(new URL('../../openai-agents/', import.meta.url))

type Exports = string | { import?: Exports; default?: Exports }

/** The ESM file a package's `exports['.']` names: `import`, else `default`, as a string or one level deeper. */
function esmEntry(entry: Exports): string {
  if (typeof entry === 'string') return entry
  const next = entry.import ?? entry.default
  if (next === undefined) throw new Error('no ESM entry in exports')
  return esmEntry(next)
}

async function fromFolder(folder: string, name: string): Promise<unknown> {
  const dir = realpathSync(join(folder, 'node_modules', ...name.split('/')))
  const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { exports: { '.': Exports } }
  return import(pathToFileURL(join(dir, esmEntry(manifest.exports['.']))).href)
}

const sourceOf = (folder: string) => import(/* @vite-ignore */ pathToFileURL(join(folder, 'src', 'index.ts')).href)

interface ToolSpec {
  name: string
  description: string
  schema: z.ZodType
  execute(args: { id: string }): Promise<string>
}

interface LangChain {
  createAgent(options: { model: unknown; tools: unknown[]; middleware: unknown[] }): {
    invoke(input: { messages: Array<{ role: string; content: string }> }): Promise<{ messages: Array<{ content: unknown }> }>
  }
  tool(fn: (args: { id: string }) => Promise<string>, options: { name: string; description: string; schema: z.ZodType }): unknown
  ChatAnthropic: new (options: Record<string, unknown>) => unknown
  shallotMiddleware(options: Record<string, unknown>): unknown
  loopErrorOf(error: unknown): LoopError | undefined
}

async function langChain(): Promise<LangChain> {
  const [{ createAgent, tool }, { ChatAnthropic }, { shallotMiddleware, loopErrorOf }] = (await Promise.all([
    fromFolder(LANGCHAIN_DIR, 'langchain'),
    fromFolder(LANGCHAIN_DIR, '@langchain/anthropic'),
    sourceOf(LANGCHAIN_DIR),
  ])) as [Pick<LangChain, 'createAgent' | 'tool'>, Pick<LangChain, 'ChatAnthropic'>, Pick<LangChain, 'shallotMiddleware' | 'loopErrorOf'>]
  return { createAgent, tool, ChatAnthropic, shallotMiddleware, loopErrorOf }
}

interface OpenAIAgents {
  Agent: new (options: Record<string, unknown>) => unknown
  run(agent: unknown, input: string, options?: { signal?: AbortSignal }): Promise<{ finalOutput?: unknown }>
  OpenAIChatCompletionsModel: new (client: unknown, model: string) => unknown
  setTracingDisabled(disabled: boolean): void
  OpenAI: new (options: Record<string, unknown>) => unknown
  shallotModel(model: unknown, options: Record<string, unknown>): unknown
  shallotFunctionTools(specs: unknown[], options: Record<string, unknown>): { tools: unknown[]; signal: AbortSignal }
  loopErrorOf(error: unknown): LoopError | undefined
}

async function openAIAgents(): Promise<OpenAIAgents> {
  const [sdk, { default: OpenAI }, ours] = (await Promise.all([
    fromFolder(OPENAI_AGENTS_DIR, '@openai/agents'),
    fromFolder(OPENAI_AGENTS_DIR, 'openai'),
    sourceOf(OPENAI_AGENTS_DIR),
  ])) as [OpenAIAgents, { default: OpenAIAgents['OpenAI'] }, OpenAIAgents]
  sdk.setTracingDisabled(true)
  const { Agent, run, OpenAIChatCompletionsModel, setTracingDisabled } = sdk
  const { shallotModel, shallotFunctionTools, loopErrorOf } = ours
  return { Agent, run, OpenAIChatCompletionsModel, setTracingDisabled, OpenAI, shallotModel, shallotFunctionTools, loopErrorOf }
}

interface AiSdk {
  generateText(options: Record<string, unknown>): Promise<{ text: string }>
  stepCountIs(n: number): unknown
  tool(options: Record<string, unknown>): unknown
  createOpenAI(options: Record<string, unknown>): { chat(model: string): unknown }
  aiSdkModel(model: unknown): ModelAdapter
  shallotModel(model: unknown, options: Record<string, unknown>): unknown
  shallotTools(
    tools: Record<string, unknown>,
    options: Record<string, unknown>,
  ): { tools: Record<string, unknown>; abortSignal: AbortSignal; stopOnHardError: unknown; error: LoopError | undefined }
}

async function aiSdk(): Promise<AiSdk> {
  const [{ generateText, stepCountIs, tool }, { createOpenAI }, { aiSdkModel, shallotModel, shallotTools }] = (await Promise.all([
    fromFolder(AI_SDK_DIR, 'ai'),
    fromFolder(AI_SDK_DIR, '@ai-sdk/openai'),
    sourceOf(AI_SDK_DIR),
  ])) as [AiSdk, AiSdk, AiSdk]
  return { generateText, stepCountIs, tool, createOpenAI, aiSdkModel, shallotModel, shallotTools }
}

let provider: FakeProvider | undefined
afterEach(async () => {
  await provider?.close()
  provider = undefined
})

const RETRY = { maxAttempts: 3, baseMs: 1, capMs: 1 }
const API_KEY = 'sk-test-not-a-secret'

/** What a host ended with, in words all share. */
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

/** Awaits `work` while moving the manual clock on 5 ms per real tick whenever something sleeps on it. */
async function driven<T>(clock: ManualClock, work: Promise<T>): Promise<T> {
  let settled: { ok: true; value: T } | { ok: false; error: unknown } | undefined
  work.then(
    (value) => {
      settled = { ok: true, value }
    },
    (error: unknown) => {
      settled = { ok: false, error }
    },
  )
  while (settled === undefined) {
    await new Promise((resolve) => setTimeout(resolve, 1))
    if (clock.pending > 0) await clock.advance(5)
  }
  if (!settled.ok) throw settled.error
  return settled.value
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

const textOf = (content: unknown) => (typeof content === 'string' ? content : JSON.stringify(content))

/** What a host's run ended with, from what it returned or threw. */
async function endingOf(server: FakeProvider, work: () => Promise<string>, loopErrorOf: (e: unknown) => LoopError | undefined) {
  try {
    return { status: 'completed', text: await work(), requests: server.requests.length } as Ending
  } catch (err) {
    const error = loopErrorOf(err)
    if (error === undefined) throw err
    return { status: 'stopped', kind: error.kind, lastFailure: lastFailureOf(error), requests: server.requests.length } as Ending
  }
}

/** A host: one run against `server` on `clock`, with `tool` offered when given. */
type Host = (server: FakeProvider, clock: ManualClock, tool?: ToolSpec) => Promise<Ending>

function throughCreateAgent(model: (server: FakeProvider) => ModelAdapter, modelMiddleware?: () => ModelMiddleware[]): Host {
  return async (server, clock, tool) => {
    const tools = tool === undefined ? [] : [defineTool({ ...tool, input: tool.schema, effect: 'read', execute: tool.execute })]
    const agent = createAgent({
      model: model(server),
      tools,
      clock,
      middleware: defaultMiddleware({ retry: RETRY }),
      modelMiddleware: modelMiddleware?.() ?? defaultModelMiddleware({ retry: RETRY }),
    })
    const outcome = await driven(clock, agent.run({ input: 'hi' }))
    const requests = server.requests.length
    if (outcome.status === 'completed') return { status: 'completed', text: outcome.output, requests }
    if (outcome.status !== 'stopped') throw new Error('the run parked, which no model failure here should do')
    return { status: 'stopped', kind: outcome.error.kind, lastFailure: lastFailureOf(outcome.error), requests }
  }
}

// LangChain, its Anthropic client and the Agents SDK take seconds to load on a busy machine: once, off the tests' clocks.
let loaded: { langchain: LangChain; agents: OpenAIAgents; ai: AiSdk } | undefined
beforeAll(async () => {
  const [langchain, agents, ai] = await Promise.all([langChain(), openAIAgents(), aiSdk()])
  loaded = { langchain, agents, ai }
}, 60_000)

// generateText with shallotModel in front of the model and shallotTools in front of the tools, as the
// @shallot/ai-sdk README leads; the SDK's own maxRetries left at its default (2).
const throughAiSdk: Host = async (server, clock, tool) => {
  if (loaded === undefined) throw new Error('the AI SDK did not load')
  const { generateText, stepCountIs, tool: aiTool, createOpenAI, shallotModel, shallotTools } = loaded.ai
  const model = shallotModel(createOpenAI({ apiKey: API_KEY, baseURL: server.openaiBaseURL }).chat('gpt-4o'), {
    clock,
    modelMiddleware: defaultModelMiddleware({ retry: RETRY }),
  })
  const tools =
    tool === undefined ? {} : { [tool.name]: aiTool({ description: tool.description, inputSchema: tool.schema, execute: tool.execute }) }
  const effects = tool === undefined ? {} : { [tool.name]: 'read' }
  const set = shallotTools(tools, { middleware: defaultMiddleware({ retry: RETRY }), effects, clock })
  const work = async () => {
    const { text } = await driven(
      clock,
      generateText({
        model,
        prompt: 'hi',
        tools: set.tools,
        abortSignal: set.abortSignal,
        stopWhen: [stepCountIs(10), set.stopOnHardError],
      }),
    )
    if (set.error !== undefined) throw set.error
    return text
  }
  return endingOf(server, work, (e) => (LoopError.is(e) ? e : set.error))
}

const throughLangChain: Host = async (server, clock, tool) => {
  if (loaded === undefined) throw new Error('LangChain did not load')
  const { createAgent: createLangChainAgent, tool: lcTool, ChatAnthropic, shallotMiddleware, loopErrorOf } = loaded.langchain
  const tools = tool === undefined ? [] : [lcTool(tool.execute, { name: tool.name, description: tool.description, schema: tool.schema })]
  const agent = createLangChainAgent({
    model: new ChatAnthropic({ model: 'claude-test', apiKey: API_KEY, anthropicApiUrl: server.url, maxRetries: 0 }),
    tools,
    middleware: [
      shallotMiddleware({ modelCall: RETRY, middleware: defaultMiddleware({ retry: RETRY }), effects: { lookup: 'read' }, clock }),
    ],
  })
  const work = async () =>
    textOf((await driven(clock, agent.invoke({ messages: [{ role: 'user', content: 'hi' }] }))).messages.at(-1)?.content)
  return endingOf(server, work, loopErrorOf)
}

const throughOpenAIAgents: Host = async (server, clock, tool) => {
  if (loaded === undefined) throw new Error('the OpenAI Agents SDK did not load')
  const { Agent, run, OpenAIChatCompletionsModel, OpenAI, shallotModel, shallotFunctionTools, loopErrorOf } = loaded.agents
  // The client as users build it, with the `openai` package's own two retries: shallotModel turns them off per request.
  const client = new OpenAI({ baseURL: server.openaiBaseURL, apiKey: API_KEY })
  const model = shallotModel(new OpenAIChatCompletionsModel(client, 'gpt-4o'), {
    name: 'gpt-4o',
    clock,
    modelMiddleware: defaultModelMiddleware({ retry: RETRY }),
  })
  const specs =
    tool === undefined
      ? []
      : [{ name: tool.name, description: tool.description, parameters: tool.schema, effect: 'read', execute: tool.execute }]
  const set = shallotFunctionTools(specs, { middleware: defaultMiddleware({ retry: RETRY }), clock })
  const agent = new Agent({ name: 'agent', model, tools: set.tools })
  const work = async () => textOf((await driven(clock, run(agent, 'hi', { signal: set.signal }))).finalOutput)
  return endingOf(server, work, loopErrorOf)
}

const HOSTS = {
  createAgent: throughCreateAgent((server) => fetchAdapter(server.openaiBaseURL)),
  // The same plain adapter through the layers as a config file builds them: retry outside the error classifier.
  modelOnion: throughCreateAgent(
    (server) => fetchAdapter(server.openaiBaseURL),
    () => [retryDefinition.buildModel(RETRY), errorClassifierDefinition.buildModel({})],
  ),
  aiSdkModel: throughCreateAgent((server) => {
    if (loaded === undefined) throw new Error('the AI SDK did not load')
    const { aiSdkModel, createOpenAI } = loaded.ai
    return aiSdkModel(createOpenAI({ apiKey: API_KEY, baseURL: server.openaiBaseURL }).chat('gpt-4o'))
  }),
  aiSdk: throughAiSdk,
  langchain: throughLangChain,
  openaiAgents: throughOpenAIAgents,
} satisfies Record<string, Host>

type HostName = keyof typeof HOSTS

/** Runs `script` through `hosts`, each against a fresh server on a fresh clock; `seen` reads that server afterwards. */
async function allHosts<const H extends HostName>(
  hosts: readonly H[],
  script: FakeStep[],
  options: { onEnd?: 'fail' | 'repeat'; tool?: () => ToolSpec; seen?: (host: H, server: FakeProvider) => void } = {},
): Promise<Record<H, Ending>> {
  const endings = {} as Record<H, Ending>
  for (const name of hosts) {
    const clock = manualClock()
    provider = await fakeProvider({ script, onEnd: options.onEnd ?? 'fail', now: () => clock.now() })
    try {
      endings[name] = await HOSTS[name](provider, clock, options.tool?.())
      options.seen?.(name, provider)
    } finally {
      await provider.close()
      provider = undefined
    }
  }
  return endings
}

const MODEL_HOSTS = ['createAgent', 'modelOnion', 'aiSdkModel', 'aiSdk', 'langchain', 'openaiAgents'] as const

/** How each host ended, in the words all share: status, LoopError kind, requests that reached the server. */
const kindsOf = (endings: Record<string, Ending>) =>
  Object.fromEntries(Object.entries(endings).map(([host, e]) => [host, [e.status, e.kind, e.requests]]))
const everyHost = <T>(value: T) => Object.fromEntries(MODEL_HOSTS.map((host) => [host, value]))

// Real servers and four SDKs' first requests: seconds on a busy two-core machine, so no test here races vitest's 5 s.
describe('the same failing model through createAgent, aiSdkModel, the AI SDK (shallotModel), LangChain and OpenAI Agents', {
  timeout: 30_000,
}, () => {
  it('503 three times, then an answer: all stop as model_failed after the same three requests', async () => {
    const unavailable: FakeStep = { fault: 'server_error', status: 503 }
    const endings = await allHosts(MODEL_HOSTS, [unavailable, unavailable, unavailable, { text: 'never read' }])
    expect(kindsOf(endings)).toEqual(everyHost(['stopped', 'model_failed', 3]))
  })

  it('a 401: all stop at once as user_input_required, after one request', async () => {
    const endings = await allHosts(MODEL_HOSTS, [{ fault: 'authentication' }, { text: 'never read' }])
    expect(kindsOf(endings)).toEqual(everyHost(['stopped', 'user_input_required', 1]))
  })

  it('503 twice, then an answer: all answer, after the same three requests', async () => {
    const endings = await allHosts(MODEL_HOSTS, [
      { fault: 'server_error', status: 503 },
      { fault: 'server_error', status: 503 },
      { text: 'the answer' },
    ])
    expect(endings).toEqual(everyHost({ status: 'completed', text: 'the answer', requests: 3 }))
  })

  it('429 on every request: all stop as model_failed after three requests, the failure classified as rate_limited', async () => {
    const endings = await allHosts(MODEL_HOSTS, [{ fault: 'rate_limit' }], { onEnd: 'repeat' })
    // The default model stack's error classifier names it (aiSdkModel classifies the 429 itself before core sees it).
    expect(endings).toEqual(everyHost({ status: 'stopped', kind: 'model_failed', lastFailure: 'rate_limited', requests: 3 }))
  })

  it('a 429 asking for 300 ms (retry-after-ms), then an answer: all answer, none sooner than asked', async () => {
    const gaps: Partial<Record<HostName, number>> = {}
    const script: FakeStep[] = [{ fault: 'rate_limit', retryAfterMs: 300 }, { text: 'the answer' }]
    const endings = await allHosts(MODEL_HOSTS, script, {
      seen: (host, server) => {
        const [first, second] = server.requests
        gaps[host] = (second?.at ?? 0) - (first?.at ?? 0)
      },
    })
    expect(endings).toEqual(everyHost({ status: 'completed', text: 'the answer', requests: 2 }))
    // Virtual time goes on in 5 ms steps while the second request is on its way, so a few ms may pass on arrival.
    for (const host of MODEL_HOSTS) {
      expect(gaps[host], host).toBeGreaterThanOrEqual(300)
      expect(gaps[host], host).toBeLessThan(350)
    }
  })
})

const TOOL_HOSTS = ['aiSdkModel', 'aiSdk', 'langchain', 'openaiAgents'] as const

/** A read tool whose upstream answers 503 to its first `failures` requests; `runs` counts its executions. */
function flakyLookup(failures: number) {
  const counter = { runs: 0 }
  const tool = (): ToolSpec => ({
    name: 'lookup',
    description: 'Look an order up',
    schema: z.object({ id: z.string() }),
    async execute({ id }) {
      counter.runs++
      if (counter.runs <= failures) throw Object.assign(new Error('HTTP 503 from the orders service'), { status: 503 })
      return `order ${id} shipped`
    },
  })
  return { tool, counter }
}

/** Runs the tool scenario through each host, counting its tool's executions per host. */
async function withTool(script: FakeStep[], failures: number, onEnd: 'fail' | 'repeat' = 'fail') {
  const runs: Partial<Record<(typeof TOOL_HOSTS)[number], number>> = {}
  const endings: Partial<Record<(typeof TOOL_HOSTS)[number], Ending>> = {}
  for (const host of TOOL_HOSTS) {
    const { tool, counter } = flakyLookup(failures)
    const ending = await allHosts([host], script, { onEnd, tool })
    endings[host] = ending[host]
    runs[host] = counter.runs
  }
  return { endings, runs }
}

const callsLookup: FakeStep = { toolCalls: [{ name: 'lookup', args: { id: 'o-1' } }] }

// createAgent here asks through aiSdkModel: the plain fetch adapter above offers no tools.
describe('the same faulted model and tool through createAgent, the AI SDK, LangChain and OpenAI Agents', { timeout: 30_000 }, () => {
  it('a tool that fails once and a model that 503s once: all answer, the tool run twice, the model asked three times', async () => {
    const { endings, runs } = await withTool([callsLookup, { fault: 'server_error', status: 503 }, { text: 'shipped' }], 1)
    expect(endings).toEqual(Object.fromEntries(TOOL_HOSTS.map((h) => [h, { status: 'completed', text: 'shipped', requests: 3 }])))
    expect(runs).toEqual({ aiSdkModel: 2, aiSdk: 2, langchain: 2, openaiAgents: 2 })
  })

  it('a tool down for good and a model that then refuses the key: all stop as user_input_required, the tool run three times', async () => {
    const { endings, runs } = await withTool([callsLookup, { fault: 'authentication' }], 99)
    expect(kindsOf(endings as Record<string, Ending>)).toEqual(
      Object.fromEntries(TOOL_HOSTS.map((h) => [h, ['stopped', 'user_input_required', 2]])),
    )
    expect(runs).toEqual({ aiSdkModel: 3, aiSdk: 3, langchain: 3, openaiAgents: 3 })
  })
})
