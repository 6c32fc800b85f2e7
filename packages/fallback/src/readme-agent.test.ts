import { readFileSync } from 'node:fs'
import { type ModelAdapter, ToolError } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { resilientAgent } from './readme-model-example.js'

const read = (file: string) => readFileSync(new URL(file, import.meta.url), 'utf8')

describe('README, model calls', () => {
  it('shows the type-checked example verbatim (importing the published name)', () => {
    const example = read('./readme-model-example.ts').replace("from './index.js'", "from '@shallot/fallback'")
    expect(read('../README.md')).toContain(example)
  })

  it('runs: gpt is down, claude answers; after 3 failed requests gpt is skipped until its cooldown ends', async () => {
    const clock = manualClock()
    let gptAsked = 0
    let gptUp = false
    const gpt: ModelAdapter = {
      name: 'gpt',
      generate: async () => {
        gptAsked++
        if (!gptUp) throw new ToolError('upstream_error', 'HTTP 503', { category: 'transient', retryable: true })
        return { text: 'from gpt', toolCalls: [] }
      },
    }
    const claude: ModelAdapter = { name: 'claude', generate: async () => ({ text: 'from claude', toolCalls: [] }) }
    const agent = resilientAgent(gpt, claude, [], clock)
    const ask = () => agent.run({ input: 'hi' })
    for (let i = 0; i < 4; i++) expect(await ask()).toMatchObject({ status: 'completed', output: 'from claude' })
    expect(gptAsked).toBe(3)
    gptUp = true
    await clock.advance(30_000)
    expect(await ask()).toMatchObject({ status: 'completed', output: 'from gpt' })
  })
})
