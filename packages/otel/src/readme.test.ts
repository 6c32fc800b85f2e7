import { readFileSync } from 'node:fs'
import { Writable } from 'node:stream'
import { defineTool, ToolError } from '@shallot/core'
import { scriptedModel } from '@shallot/testing'
import pino from 'pino'
import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { otelSdk } from '../test/world.js'
import { tracedAgent } from './readme-events-example.js'
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

  it('runs: a typo and its fix become two execute_tool spans under invoke_agent, and operator lines', async () => {
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
    const model = scriptedModel([
      { toolCalls: [{ name: 'read_file', args: { path: 'src/mian.rs' } }] },
      { toolCalls: [{ name: 'read_file', args: { path: 'src/main.rs' } }] },
      { text: 'It defines main().' },
    ])
    const agent = observedAgent(model, [readFile], pino({ base: null }, stream))
    await expect(agent.run({ input: 'What does src/main.rs define?' })).resolves.toMatchObject({ status: 'completed' })
    const spans = sdk.spans()
    const root = spans.find((s) => s.name === 'invoke_agent support')
    const children = spans.filter((s) => s.parentSpanContext?.spanId === root?.spanContext().spanId).map((s) => s.name)
    expect(children).toEqual([
      'chat gpt-4.1-mini',
      'execute_tool read_file',
      'chat gpt-4.1-mini',
      'execute_tool read_file',
      'chat gpt-4.1-mini',
    ])
    expect(lines.map((l) => l.msg)).toEqual([
      'run started',
      'model call',
      'tool call failed (soft error, the model reads it)',
      'model call',
      'model call',
      'run finished',
    ])
  })
})

describe('README, from core events', () => {
  it('shows the type-checked example verbatim and it traces a run with token totals and no wrappers', async () => {
    const example = read('./readme-events-example.ts').replace("from './index.js'", "from '@shallot/otel'")
    expect(read('../README.md')).toContain(example)
    sdk = otelSdk()
    const readFile = defineTool({
      name: 'read_file',
      description: 'Read a file',
      input: z.object({ path: z.string() }),
      effect: 'read',
      execute: () => 'fn main() {}',
    })
    // scriptedModel() reports no usage; this one does, as a provider's adapter would.
    const replies = [
      { toolCalls: [{ id: 't1', name: 'read_file', args: { path: 'src/main.rs' } }], usage: { inputTokens: 50, outputTokens: 5 } },
      { text: 'It defines main().', usage: { inputTokens: 60, outputTokens: 6 } },
    ]
    const model = { name: 'gpt-4.1-mini', generate: async () => replies.shift() ?? { text: 'extra' } }
    const agent = tracedAgent(model, [readFile])
    await expect(agent.run({ input: 'What does src/main.rs define?' })).resolves.toMatchObject({ status: 'completed' })
    const spans = sdk.spans()
    const root = spans.find((s) => s.name === 'invoke_agent')
    expect(root?.attributes).toMatchObject({ 'gen_ai.usage.input_tokens': 110, 'gen_ai.usage.output_tokens': 11 })
    const children = spans.filter((s) => s.parentSpanContext?.spanId === root?.spanContext().spanId).map((s) => s.name)
    expect(children[0]).toMatch(/^chat /)
    expect(children.filter((n) => n === 'execute_tool read_file')).toHaveLength(1)
  })
})
