import { readFileSync } from 'node:fs'
import type { ModelAdapter } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { boundedAgent } from './readme-model-example.js'

const read = (file: string) => readFileSync(new URL(file, import.meta.url), 'utf8')
const hanging = (name: string): ModelAdapter => ({ name, generate: () => new Promise<never>(() => {}) })

describe('README, model calls', () => {
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
})
