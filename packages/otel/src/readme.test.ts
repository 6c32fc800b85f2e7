import { readFileSync } from 'node:fs'
import { Writable } from 'node:stream'
import { trace } from '@opentelemetry/api'
import { defineTool, type ModelAdapter, ToolError } from '@shallot/core'
import { scriptedModel } from '@shallot/testing'
import pino from 'pino'
import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { otelSdk } from '../test/world.js'
import { observedAgent } from './readme-example.js'

const read = (file: string) => readFileSync(new URL(file, import.meta.url), 'utf8')

let sdk: ReturnType<typeof otelSdk> | undefined
afterEach(async () => {
  await sdk?.close()
  sdk = undefined
})

describe('README', () => {
  it('shows the type-checked example verbatim (importing the published name)', () => {
    const example = read('./readme-example.ts').replace("from './index.js'", "from '@shallot/otel'")
    expect(read('../README.md')).toContain(example)
  })

  it('runs: a typo and its fix become two execute_tool spans under invoke_agent, the model SDK’s span under chat, and core’s operator lines', async () => {
    sdk = otelSdk()
    const lines: Array<Record<string, unknown>> = []
    const stream = new Writable({
      write(chunk, _encoding, done) {
        for (const text of String(chunk).split('\n')) if (text !== '') lines.push(JSON.parse(text))
        done()
      },
    })
    const readFile = defineTool({
      name: 'read_file',
      description: 'Read a file',
      input: z.object({ path: z.string() }),
      effect: 'read',
      execute: ({ path }) => {
        if (path !== 'src/main.rs') throw new ToolError('not_found', `file ${path} not found`)
        return 'fn main() {}'
      },
    })
    const script = scriptedModel([
      { toolCalls: [{ name: 'read_file', args: { path: 'src/mian.rs' } }] },
      { toolCalls: [{ name: 'read_file', args: { path: 'src/main.rs' } }] },
      { text: 'It defines main().' },
    ])
    // As a provider's adapter would: a name, a provider id, usage, and an HTTP span of its own.
    let tokens = 50
    const model: ModelAdapter = {
      name: 'gpt-4.1-mini',
      provider: 'openai.chat',
      async generate(request) {
        const span = trace.getTracer('http').startSpan('POST /v1/chat/completions')
        const reply = await script.generate(request)
        span.end()
        tokens += 10
        return { ...reply, usage: { inputTokens: tokens, outputTokens: 5 } }
      },
    }
    const agent = observedAgent(model, [readFile], pino({ base: null }, stream))
    await expect(agent.run({ input: 'What does src/main.rs define?' })).resolves.toMatchObject({ status: 'completed' })
    const spans = sdk.spans()
    const root = spans.find((s) => s.name === 'invoke_agent')
    expect(root?.attributes).toMatchObject({
      'gen_ai.provider.name': 'openai',
      'gen_ai.usage.input_tokens': 60 + 70 + 80,
      'gen_ai.usage.output_tokens': 15,
    })
    const children = spans.filter((s) => s.parentSpanContext?.spanId === root?.spanContext().spanId).map((s) => s.name)
    expect(children).toEqual([
      'chat gpt-4.1-mini',
      'execute_tool read_file',
      'chat gpt-4.1-mini',
      'execute_tool read_file',
      'chat gpt-4.1-mini',
    ])
    const chats = new Set(spans.filter((s) => s.name === 'chat gpt-4.1-mini').map((s) => s.spanContext().spanId))
    const requests = spans.filter((s) => s.name === 'POST /v1/chat/completions')
    expect(requests.every((s) => chats.has(s.parentSpanContext?.spanId ?? ''))).toBe(true)
    const operator = new Set(['run started', 'model call', 'tool call', 'run completed'])
    expect(lines.filter((l) => operator.has(String(l.msg))).map((l) => [l.msg, l.outcome])).toEqual([
      ['run started', undefined],
      ['model call', undefined],
      ['tool call', 'soft_error'],
      ['model call', undefined],
      ['tool call', 'ok'],
      ['model call', undefined],
      ['run completed', 'completed'],
    ])
  })
})
