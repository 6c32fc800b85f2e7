import { readFileSync } from 'node:fs'
import { defineTool, type ModelAdapter, ToolError } from '@shallot/core'
import { manualClock, scriptedModel } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { resilientAgent } from './readme-agent-example.js'

const read = (file: string) => readFileSync(new URL(file, import.meta.url), 'utf8')

describe('README, one layer in both lists', () => {
  it('shows the type-checked example verbatim (importing the published name)', () => {
    const example = read('./readme-agent-example.ts').replace("from './index.js'", "from '@shallot/fallback'")
    expect(read('../README.md')).toContain(example)
  })

  it('runs, model calls: gpt is down, claude answers; after 3 failed requests gpt is skipped until its cooldown ends', async () => {
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

  it('runs, tool calls: the status page fails, and the model reads its last good answer with its age', async () => {
    const clock = manualClock()
    let up = true
    const statusPage = defineTool({
      name: 'status_page',
      description: 'Current status of our services',
      input: z.object({ region: z.string() }),
      effect: 'read',
      execute: ({ region }) => {
        if (!up) throw new ToolError('upstream_error', 'HTTP 503', { category: 'transient' })
        return `${region}: all systems go`
      },
    })
    const check = { name: 'status_page', args: { region: 'eu' } }
    const gpt = scriptedModel([
      { toolCalls: [check] },
      async () => {
        up = false
        await clock.advance(120_000)
        return { toolCalls: [check] }
      },
      ({ lastResults }) => ({ text: String(lastResults[0]?.content) }),
    ])
    const claude: ModelAdapter = { name: 'claude', generate: async () => ({ text: 'never asked', toolCalls: [] }) }
    const outcome = await resilientAgent(gpt, claude, [statusPage], clock).run({ input: 'Is the EU region up?' })
    expect(outcome).toMatchObject({
      status: 'completed',
      output: '{"note":"cached 2 min ago","value":"eu: all systems go"}',
    })
  })
})
