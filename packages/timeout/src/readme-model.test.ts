import { readFileSync } from 'node:fs'
import { defineTool, type ModelAdapter } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { boundedAgent } from './readme-model-example.js'

const read = (file: string) => readFileSync(new URL(file, import.meta.url), 'utf8')
const hanging = (name: string): ModelAdapter => ({ name, generate: () => new Promise<never>(() => {}) })

describe('README, tool calls and model calls', () => {
  it('shows the type-checked example verbatim (importing the published name)', () => {
    const example = read('./readme-model-example.ts').replace("from './index.js'", "from '@shallot/timeout'")
    expect(read('../README.md')).toContain(example)
  })

  it.each([
    ['slow', 20_000],
    ['fast', 5_000],
  ])('runs: a model (%s) that never answers is cut at its deadline, %i ms', async (name, ms) => {
    const clock = manualClock()
    const run = boundedAgent(hanging(name), [], clock).run({ input: 'hi' })
    await clock.runAll()
    const outcome = await run
    expect(outcome).toMatchObject({
      status: 'stopped',
      error: { kind: 'model_failed', details: { failure: `the model did not answer within ${ms} ms` } },
    })
    expect(clock.now()).toBe(ms)
    expect(clock.pending).toBe(0)
  })

  it.each([
    ['search', 2_000],
    ['fetch_page', 20_000],
  ])('runs: a tool (%s) that never answers is cut at its deadline, %i ms, and the model reads the timeout', async (name, ms) => {
    const clock = manualClock()
    const stuck = defineTool({
      name,
      description: 'Never answers',
      input: z.object({}),
      effect: 'read',
      execute: () => new Promise(() => {}),
    })
    let turn = 0
    const model: ModelAdapter = {
      generate: async ({ messages }) => {
        turn++
        if (turn === 1) return { toolCalls: [{ id: 'c1', name, args: {} }] }
        return { text: String(messages.at(-1)?.content), toolCalls: [] }
      },
    }
    const run = boundedAgent(model, [stuck], clock).run({ input: 'go' })
    await clock.runAll()
    const outcome = await run
    expect(outcome).toMatchObject({ status: 'completed', output: expect.stringContaining(`timed out after ${ms / 1000}s`) })
    expect(clock.now()).toBe(ms)
  })
})
