import { readFileSync } from 'node:fs'
import { type ModelAdapter, ToolError } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { steadyAgent } from './readme-outage-example.js'

const read = (file: string) => readFileSync(new URL(file, import.meta.url), 'utf8')

/** A provider that answers 503 until `untilMs` on the clock, then answers; counts the requests. */
function downUntil(clock: ReturnType<typeof manualClock>, untilMs: number) {
  const asked: number[] = []
  const model: ModelAdapter = {
    generate: async () => {
      asked.push(clock.now())
      if (clock.now() < untilMs) throw new ToolError('overloaded', 'HTTP 503', { category: 'transient' })
      return { text: 'answered', toolCalls: [] }
    },
  }
  return { model, asked }
}

async function settle(clock: ReturnType<typeof manualClock>, run: Promise<unknown>) {
  let done = false
  void run.then(
    () => (done = true),
    () => (done = true),
  )
  for (let i = 0; i < 200 && !done; i++) await clock.runAll()
  return run
}

describe('README, riding out an outage', () => {
  it('shows the type-checked example verbatim (importing the published name)', () => {
    const example = read('./readme-outage-example.ts').replace("from './index.js'", "from '@shallot/retry'")
    expect(read('../README.md')).toContain(example)
  })

  it('runs: 30 s of 503s, then the answer, with a dozen requests or fewer', async () => {
    const clock = manualClock()
    const { model, asked } = downUntil(clock, 30_000)
    const outcome = await settle(clock, steadyAgent(model, [], clock).run({ input: 'hi' }))
    expect(outcome).toMatchObject({ status: 'completed', output: 'answered' })
    expect(asked.length).toBeLessThanOrEqual(12)
  })

  it('runs: a provider down for good costs at most 21 requests, the last within the two minutes, whatever the draws', async () => {
    const clock = manualClock()
    const { model, asked } = downUntil(clock, Number.POSITIVE_INFINITY)
    const outcome = await settle(clock, steadyAgent(model, [], clock).run({ input: 'hi' }))
    expect(outcome).toMatchObject({ status: 'stopped', error: { kind: 'model_failed' } })
    expect(asked.length).toBeGreaterThan(3)
    expect(asked.length).toBeLessThanOrEqual(21)
    expect(asked.at(-1)).toBeLessThanOrEqual(120_000)
  })
})
