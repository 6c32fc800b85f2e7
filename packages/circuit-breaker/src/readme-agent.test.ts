import { readFileSync } from 'node:fs'
import { type ModelAdapter, ToolError } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { guardedAgent } from './readme-model-example.js'

const read = (file: string) => readFileSync(new URL(file, import.meta.url), 'utf8')

describe('README, model calls', () => {
  it('shows the type-checked example verbatim (importing the published name)', () => {
    const example = read('./readme-model-example.ts').replace("from './index.js'", "from '@shallot/circuit-breaker'")
    expect(read('../README.md')).toContain(example)
  })

  it('runs: two failures open the circuit, the next run fails fast without asking, a probe after 10 s closes it', async () => {
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
})
