import { readFileSync } from 'node:fs'
import Anthropic from '@anthropic-ai/sdk'
import { type FakeProvider, type FakeTurn, fakeProvider, manualClock, seededRandom } from '@shallot/testing'
import OpenAI from 'openai'
import { createRun, createStack, defaultMiddleware, defineTool, type Stack, type ToolResult } from 'shallot'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { z } from 'zod'
import { supportStack } from './provider-sdk-tools.js'

// A tool wrapping a provider SDK, under the default stack, against a real HTTP server on 127.0.0.1.
// Shallot's waits run on a manual clock. The SDKs' own waits are real timers, so every fault the SDK
// itself retries carries `retry-after-ms: 0` (which both SDKs obey) unless a test is about that wait.

let provider: FakeProvider
const clock = manualClock(Date.parse('2026-10-21T07:28:00Z'))
beforeEach(async () => {
  provider = await fakeProvider({ now: clock.now, onEnd: 'repeat' })
})
afterEach(() => provider.close())

type Sdk = 'openai' | 'anthropic'

/** A tool calling `sdk` with the SDK's default retries (`maxRetries` undefined) or the given count. */
function sdkTool(sdk: Sdk, effect: 'read' | 'write', maxRetries?: number) {
  const retries = maxRetries === undefined ? {} : { maxRetries }
  const openai = new OpenAI({ apiKey: 'sk-test-key-not-a-secret', baseURL: provider.openaiBaseURL, ...retries })
  const anthropic = new Anthropic({ apiKey: 'sk-ant-test-key-not-a-secret', baseURL: provider.url, ...retries })
  return defineTool({
    name: 'ask_model',
    description: 'Ask a model',
    input: z.object({ q: z.string() }),
    effect,
    execute: async ({ q }, { signal }) => {
      if (sdk === 'openai') {
        const reply = await openai.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: q }] }, { signal })
        return reply.choices[0]?.message.content ?? ''
      }
      const reply = await anthropic.messages.create(
        { model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: q }] },
        { signal },
      )
      return reply.content.map((block) => (block.type === 'text' ? block.text : '')).join('')
    },
  })
}

/** The default stack on the manual clock, which moves exactly as far as each retry the stack schedules. */
function defaultStack(tool: ReturnType<typeof sdkTool>, options?: Parameters<typeof defaultMiddleware>[0]) {
  const stack = createStack({ middleware: defaultMiddleware(options), tools: [tool], clock, random: seededRandom(7) })
  return { stack, types: followRetries(stack) }
}

/** Moves the manual clock by each delay a retry schedules, once its sleep has begun; returns the event types seen. */
function followRetries(stack: Stack): string[] {
  const types: string[] = []
  stack.on((event) => {
    types.push(event.type)
    if (event.type === 'retry.scheduled') setImmediate(() => void clock.advance(event.delayMs as number))
  })
  return types
}

const call = { id: 'c1', name: 'ask_model', args: { q: 'hi' } }
const sdks: readonly Sdk[] = ['openai', 'anthropic']

describe('upstream requests per logical call, under defaultMiddleware()', () => {
  it.each(sdks)("%s with the SDK's default maxRetries: 2 sends 9 requests for one call; with maxRetries: 0, 3", async (sdk) => {
    provider.script({ fault: 'server_error', headers: { 'retry-after-ms': '0' } })
    const nested = await defaultStack(sdkTool(sdk, 'read')).stack.dispatch(call, { run: createRun() })
    expect(nested).toMatchObject({ ok: false, attempts: 3, error: { code: 'upstream_error' } })
    expect(provider.requests).toHaveLength(9)

    const before = provider.requests.length
    const single = await defaultStack(sdkTool(sdk, 'read', 0)).stack.dispatch(call, { run: createRun() })
    expect(single).toMatchObject({ ok: false, attempts: 3, error: { code: 'upstream_error' } })
    expect(provider.requests.length - before).toBe(3)
  })

  it.each(sdks)('%s with maxRetries: 0: a 500 then an answer is 2 requests, the second after shallot’s backoff', async (sdk) => {
    provider.script({ fault: 'server_error' }, { text: 'hello' })
    const { stack, types } = defaultStack(sdkTool(sdk, 'read', 0))
    const result = await stack.dispatch(call, { run: createRun() })
    expect(result).toMatchObject({ ok: true, value: 'hello', attempts: 2 })
    expect(provider.requests.map((r) => r.outcome)).toEqual(['faulted', 'replied'])
    expect(types).toContain('retry.scheduled')
  })
})

describe('a 429 on a write tool', () => {
  it.each(sdks)(
    "%s with the SDK's default retries: the SDK sleeps out Retry-After until shallot's timeout fires, and the write may have taken effect",
    async (sdk) => {
      provider.script({ fault: 'rate_limit', retryAfterSeconds: 20 })
      const { stack } = defaultStack(sdkTool(sdk, 'write'), { timeout: { ms: 10_000 } })
      const pending = stack.dispatch(call, { run: createRun() })
      await provider.waitForRequest(0)
      await vi.waitUntil(() => provider.requests[0]?.outcome === 'faulted')
      // The SDK now sleeps 20 s (real time) before its own retry; shallot's deadline is 10 s of virtual time.
      await clock.advance(10_000)
      const result: ToolResult = await pending
      expect(result).toMatchObject({ ok: false, attempts: 1, error: { code: 'timeout', safeToRepeat: false } })
      expect(result.content).not.toContain('rate')
      await provider.whenIdle()
      // The deadline's abort ended the SDK's sleep: it never sent its retry.
      expect(provider.requests).toHaveLength(1)
    },
  )

  it.each(sdks)(
    '%s with maxRetries: 0: the model reads a refused, safe-to-repeat rate_limited with the server’s Retry-After, not a timeout',
    async (sdk) => {
      provider.script({ fault: 'rate_limit', retryAfterSeconds: 20 })
      const { stack, types } = defaultStack(sdkTool(sdk, 'write', 0), { timeout: { ms: 10_000 } })
      const result = await stack.dispatch(call, { run: createRun() })
      // 20 s is past retry's longest wait, so the refusal goes to the model at once, with the wait it must respect.
      expect(result).toMatchObject({
        ok: false,
        attempts: 1,
        error: { code: 'rate_limited', category: 'transient', retryable: true, safeToRepeat: true, retryAfterMs: 20_000 },
      })
      expect(types).not.toContain('timeout.expired')
      expect(provider.requests).toHaveLength(1)
      expect(result.content).toContain('"error":"rate_limited"')
      expect(result.content).toContain(sdk === 'openai' ? 'OpenAI API: HTTP 429' : 'Anthropic API: HTTP 429')
      expect(result.content).toContain('"retryAfterMs":20000')
    },
  )

  it.each(sdks)('%s with maxRetries: 0: a short Retry-After is waited out by shallot, on its clock, before each repeat', async (sdk) => {
    provider.script({ fault: 'rate_limit', retryAfterSeconds: 2 })
    const { stack } = defaultStack(sdkTool(sdk, 'write', 0), { timeout: { ms: 10_000 } })
    const result = await stack.dispatch(call, { run: createRun() })
    // Every attempt was refused at the door, so shallot repeated the write, each time no sooner than asked. Every
    // attempt failed the same way, so the model is not invited back (decision 410): no retryAfterMs, a hint saying why.
    expect(result).toMatchObject({ ok: false, attempts: 3, error: { code: 'rate_limited', safeToRepeat: true, retryable: false } })
    expect(result.error?.retryAfterMs).toBeUndefined()
    expect(result.error?.hint).toMatch(/failed all 3 attempts/)
    expect(provider.requests).toHaveLength(3)
    const gaps = provider.requests.slice(1).map((r, i) => r.at - (provider.requests[i]?.at ?? 0))
    expect(gaps).toHaveLength(2)
    for (const gap of gaps) expect(gap).toBeGreaterThanOrEqual(2000)
  })

  it.each(sdks)('%s with maxRetries: 0: an insufficient-quota refusal is not repeated and ends the run for a person', async (sdk) => {
    provider.script({ fault: 'insufficient_quota' })
    const { stack } = defaultStack(sdkTool(sdk, 'write', 0))
    await expect(stack.dispatch(call, { run: createRun() })).rejects.toMatchObject({ kind: 'user_input_required' })
    expect(provider.requests).toHaveLength(1)
  })
})

describe('the README example (packages/error-classifier)', () => {
  beforeEach(() => {
    vi.stubEnv('OPENAI_API_KEY', 'sk-test-key-not-a-secret')
    vi.stubEnv('ANTHROPIC_API_KEY', 'sk-ant-test-key-not-a-secret')
    vi.stubEnv('OPENAI_BASE_URL', provider.openaiBaseURL)
    vi.stubEnv('ANTHROPIC_BASE_URL', provider.url)
  })
  afterEach(() => vi.unstubAllEnvs())

  it('is shown verbatim, importing the published names', () => {
    const readme = readFileSync(new URL('../../../packages/error-classifier/README.md', import.meta.url), 'utf8')
    const example = readFileSync(new URL('./provider-sdk-tools.ts', import.meta.url), 'utf8')
    expect(readme).toContain(example)
  })

  it('runs: one request per attempt for every tool, and a 429 on the write is repeated after Retry-After, sending once', async () => {
    const sent: string[] = []
    const stack = supportStack(async (ticket, text) => {
      sent.push(`${ticket}: ${text}`)
    }, clock)
    followRetries(stack)
    provider.script({ fault: 'server_error' }, { fault: 'server_error' }, { fault: 'server_error' })
    const summary = await stack.dispatch({ id: 's', name: 'summarise', args: { text: 'a long text' } }, { run: createRun() })
    expect(summary).toMatchObject({ ok: false, attempts: 3, error: { code: 'upstream_error' } })
    expect(provider.requests).toHaveLength(3)

    provider.script({ fault: 'rate_limit', retryAfterSeconds: 2 }, { text: 'Your refund is on its way.' })
    const reply = await stack.dispatch(
      { id: 'r', name: 'reply_to_ticket', args: { ticket: 'T-1', question: 'refund?' } },
      { run: createRun() },
    )
    expect(reply).toMatchObject({ ok: true, attempts: 2 })
    expect(sent).toEqual(['T-1: Your refund is on its way.'])

    provider.script({ fault: 'insufficient_quota' }, { text: 'billing' })
    const label = stack.dispatch({ id: 'l', name: 'classify_ticket', args: { text: 'charged twice' } }, { run: createRun() })
    await expect(label).rejects.toMatchObject({ kind: 'user_input_required' })
    expect(provider.requests).toHaveLength(6)
  })
})

describe('docs/errors.md', () => {
  const page = readFileSync(new URL('../../../docs/errors.md', import.meta.url), 'utf8')
  const scenarios: readonly [name: string, sdk: Sdk, turn: FakeTurn][] = [
    ['a 429 past retry’s longest wait, from OpenAI', 'openai', { fault: 'rate_limit', retryAfterSeconds: 20 }],
    ['a 529 overloaded_error, from Anthropic', 'anthropic', { fault: 'overloaded' }],
  ]
  it.each(scenarios)('quotes what the model reads for %s', async (_name, sdk, turn) => {
    provider.script(turn)
    const { stack } = defaultStack(sdkTool(sdk, 'write', 0))
    const { content } = await stack.dispatch(call, { run: createRun() })
    if (process.env.SHALLOT_PRINT_ERRORS) console.log(content)
    expect(page.includes(content), `docs/errors.md does not contain:\n${content}`).toBe(true)
  })
})
