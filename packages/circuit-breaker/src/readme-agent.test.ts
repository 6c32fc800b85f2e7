import { readFileSync } from 'node:fs'
import { defineTool, type ModelAdapter, ToolError } from '@shallot/core'
import { manualClock, scriptedModel } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { guardedAgent } from './readme-agent-example.js'

const read = (file: string) => readFileSync(new URL(file, import.meta.url), 'utf8')

describe('README, one layer in both lists', () => {
  it('shows the type-checked example verbatim (importing the published name)', () => {
    const example = read('./readme-agent-example.ts').replace("from './index.js'", "from '@shallot/circuit-breaker'")
    expect(read('../README.md')).toContain(example)
  })

  it('runs, model calls: two failures open the circuit, the next run fails fast without asking, a probe after 10 s closes it', async () => {
    const clock = manualClock()
    let asked = 0
    let up = false
    const gpt: ModelAdapter = {
      name: 'gpt',
      generate: async () => {
        asked++
        if (!up) throw new ToolError('upstream_error', 'HTTP 503', { category: 'transient', retryable: true })
        return { text: 'back', toolCalls: [] }
      },
    }
    const agent = guardedAgent(gpt, [], clock)
    await agent.run({ input: 'hi' })
    await agent.run({ input: 'hi' })
    await clock.advance(2000)
    const fast = await agent.run({ input: 'hi' })
    expect(asked).toBe(2)
    expect(fast.status === 'stopped' && fast.error.message).toBe(
      "the model call failed after 1 attempt: model 'gpt' skipped: circuit open after 2 failures (8000 ms left)",
    )
    up = true
    await clock.advance(8000)
    expect(await agent.run({ input: 'hi' })).toMatchObject({ status: 'completed', output: 'back' })
  })

  it('runs, tool calls: after two failures the model reads circuit_open instead of a third request', async () => {
    const clock = manualClock()
    let requests = 0
    const search = defineTool({
      name: 'search',
      description: 'Search the docs',
      input: z.object({ q: z.string() }),
      effect: 'read',
      execute: () => {
        requests++
        throw new ToolError('upstream_error', 'HTTP 503', { category: 'transient' })
      },
    })
    const ask = (id: string) => ({ toolCalls: [{ id, name: 'search', args: { q: id } }] })
    const model = scriptedModel([ask('1'), ask('2'), ask('3'), ({ lastResults }) => ({ text: String(lastResults[0]?.content) })])
    const outcome = await guardedAgent(model, [search], clock).run({ input: 'look it up' })
    expect(requests).toBe(2)
    expect(outcome).toMatchObject({ status: 'completed', output: expect.stringContaining('circuit breaker open after 2 failures') })
  })
})
