import { readFileSync } from 'node:fs'
import { type ModelAdapter, ToolError } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { patientAgent } from './readme-model-example.js'

const read = (file: string) => readFileSync(new URL(file, import.meta.url), 'utf8')

describe('README, model calls', () => {
  it('shows the type-checked example verbatim (importing the published name)', () => {
    const example = read('./readme-model-example.ts').replace("from './index.js'", "from '@shallot/retry'")
    expect(read('../README.md')).toContain(example)
  })

  it('runs: two 429s asking for 2 s are each waited out exactly, the third attempt answers', async () => {
    const clock = manualClock()
    const asked: number[] = []
    const gpt: ModelAdapter = {
      generate: async () => {
        asked.push(clock.now())
        if (asked.length < 3)
          throw new ToolError('rate_limited', 'HTTP 429', { category: 'transient', retryable: true, retryAfterMs: 2000 })
        return { text: 'answered', toolCalls: [] }
      },
    }
    const run = patientAgent(gpt, [], clock).run({ input: 'hi' })
    await clock.runAll()
    expect(await run).toMatchObject({ status: 'completed', output: 'answered', steps: 3 })
    expect(asked).toEqual([0, 2000, 4000])
  })
})
