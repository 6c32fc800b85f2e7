import { readFileSync } from 'node:fs'
import { ToolError } from '@shallot/core'
import { APICallError, tool } from 'ai'
import { MockLanguageModelV3 } from 'ai/test'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { z } from 'zod'
import { payWithApproval } from './readme-approval-example.js'
import { type Payments, refunds } from './readme-example.js'
import { chat } from './readme-stream-example.js'
import { explainMain } from './readme-tools-example.js'
import { lastToolResults, scriptedLanguageModel } from './scripted-language-model.test-helper.js'

const read = (file: string) => readFileSync(new URL(file, import.meta.url), 'utf8')

afterEach(() => {
  vi.useRealTimers()
})

type Generated = Awaited<ReturnType<MockLanguageModelV3['doGenerate']>>
const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
}
const rateLimited = () =>
  new APICallError({
    message: 'Rate limit reached',
    url: 'https://api.example/v1/chat/completions',
    requestBodyValues: {},
    statusCode: 429,
    responseHeaders: { 'retry-after': '1' },
    isRetryable: true,
  })
const refundCall = (id: string): Generated => ({
  content: [{ type: 'tool-call', toolCallId: id, toolName: 'refund', input: '{"payment":"pay_1"}' }],
  finishReason: { unified: 'tool-calls', raw: undefined },
  usage,
  warnings: [],
})
const answer = (text: string): Generated => ({
  content: [{ type: 'text', text }],
  finishReason: { unified: 'stop', raw: undefined },
  usage,
  warnings: [],
})

/** A model that is rate limited once, then asks for the refund, then answers with what the refund tool said. */
function refundingModel() {
  let calls = 0
  return new MockLanguageModelV3({
    doGenerate: async ({ prompt }) => {
      calls++
      if (calls === 1) throw rateLimited()
      const last = prompt.at(-1)
      if (last?.role !== 'tool') return refundCall(`call_${calls}`)
      const output = last.content[0]?.type === 'tool-result' ? last.content[0].output : undefined
      return answer(`done: ${output?.type === 'text' ? output.value : JSON.stringify(output)}`)
    },
  })
}

describe('README', () => {
  it('shows the type-checked example verbatim (importing the published name)', () => {
    const example = read('./readme-example.ts').replace("from './index.js'", "from '@shallot/ai-sdk'")
    expect(read('../README.md')).toContain(example)
  })

  it('runs: the model is rate limited once and the refund times out after it landed; the service takes it once', async () => {
    vi.useFakeTimers()
    const taken = new Map<string, string>()
    let attempts = 0
    const payments: Payments = {
      async refund(payment, { idempotencyKey }) {
        attempts++
        if (idempotencyKey === undefined) throw new Error('the refund was sent without a key')
        if (!taken.has(idempotencyKey)) taken.set(idempotencyKey, `re_${payment}`)
        // The first answer is lost on the way back: the refund landed, the caller cannot tell.
        if (attempts === 1) throw Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' })
        return taken.get(idempotencyKey) as string
      },
      findRefund: async (key) => (key === undefined ? undefined : taken.get(key)),
    }
    const pending = refunds(refundingModel(), payments)('pay_1')
    await vi.advanceTimersByTimeAsync(5_000)
    expect(await pending).toBe('done: re_pay_1')
    expect(attempts).toBe(2)
    expect(taken.size).toBe(1)
  })

  it('runs: a model that stays down ends as the report, not a throw', async () => {
    vi.useFakeTimers()
    const down = new MockLanguageModelV3({ doGenerate: async () => Promise.reject(rateLimited()) })
    const payments: Payments = { refund: async () => 'never', findRefund: async () => undefined }
    const pending = refunds(down, payments)('pay_1')
    // The default model stack rides a provider's outage out for two minutes before the run stops.
    await vi.advanceTimersByTimeAsync(130_000)
    const report = await pending
    expect(report).toMatch(/^Run .* stopped: model_failed\nTask: Refund payment pay_1\n/)
    expect(report).toContain('generate again with the conversation so far')
  })

  it('shows the tools-only example verbatim', () => {
    const example = read('./readme-tools-example.ts').replace("from './index.js'", "from '@shallot/ai-sdk'")
    expect(read('../README.md')).toContain(example)
  })

  it('shows the streamText example verbatim', () => {
    const example = read('./readme-stream-example.ts').replace("from './index.js'", "from '@shallot/ai-sdk'")
    expect(read('../README.md')).toContain(example)
  })

  it('runs: the streamText example sends the loop_detected stop as an error chunk, not an abort', async () => {
    const readFile = tool({
      inputSchema: z.object({ path: z.string() }),
      execute: async ({ path }): Promise<string> => {
        throw new ToolError('not_found', `file ${path} not found`)
      },
    })
    const model = scriptedLanguageModel([{ toolCalls: [{ name: 'read_file', input: { path: 'src/mian.rs' } }] }])
    // Watched, not muted: the hard stop goes to the UI, and anything the example would print still shows.
    const printed = vi.spyOn(console, 'error')
    const response = chat(model, readFile, new AbortController().signal)
    const body = await response.text()
    expect(printed).not.toHaveBeenCalled()
    const chunks = body.split('\n\n').flatMap((event) => (event.startsWith('data: {') ? [JSON.parse(event.slice(6))] : []))
    const errors = chunks.filter((chunk) => chunk.type === 'error')
    expect(errors.length).toBeGreaterThan(0)
    for (const error of errors) expect(error.errorText).toContain('read_file was called 5 times with the same arguments')
    expect(chunks.some((chunk) => chunk.type === 'abort')).toBe(false)
  })

  it('runs: the example recovers from a mistyped path', async () => {
    const files: Record<string, string> = { 'src/main.rs': 'fn main() {}' }
    const readFile = async (path: string) => {
      const text = files[path]
      if (text === undefined) throw new ToolError('not_found', `file ${path} not found`)
      return text
    }
    const model = scriptedLanguageModel([
      { toolCalls: [{ name: 'read_file', input: { path: 'src/mian.rs' } }] },
      { toolCalls: [{ name: 'read_file', input: { path: 'src/main.rs' } }] },
      (prompt) => ({ text: `It defines ${String(lastToolResults(prompt)[0]?.output.value)}` }),
    ])
    await expect(explainMain(model, readFile)).resolves.toBe('It defines fn main() {}')
  })

  it('shows the approval example verbatim', () => {
    const example = read('./readme-approval-example.ts').replace("from './index.js'", "from '@shallot/ai-sdk'")
    expect(read('../README.md')).toContain(example)
  })

  it('runs: an approved transfer is sent once; a denied one never, and the model reads denied_by_user', async () => {
    for (const yes of [true, false]) {
      const sent: string[] = []
      const model = scriptedLanguageModel([
        { toolCalls: [{ name: 'transfer', input: { to: 'bob', amountCents: 50_000 } }] },
        (prompt) => {
          const seen = lastToolResults(prompt)[0]?.output as { value?: unknown; reason?: string } | undefined
          return { text: `read: ${seen?.reason ?? String(seen?.value)}` }
        },
      ])
      const output = await payWithApproval(
        model,
        () => yes,
        (to, cents) => {
          sent.push(`${cents} to ${to}`)
          return `sent ${cents} to ${to}`
        },
      )
      expect(output).toEqual(yes ? 'read: sent 50000 to bob' : expect.stringContaining('"error":"denied_by_user"'))
      expect(sent).toEqual(yes ? ['50000 to bob'] : [])
    }
  })
})
