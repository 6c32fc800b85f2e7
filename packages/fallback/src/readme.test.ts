import { readFileSync } from 'node:fs'
import { defineTool, ToolError } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { statusStack } from './readme-example.js'

const read = (file: string) => readFileSync(new URL(file, import.meta.url), 'utf8')

describe('README', () => {
  it('shows the type-checked example verbatim (importing the published name)', () => {
    const example = read('./readme-example.ts').replace("from './index.js'", "from '@shallot/fallback'")
    expect(read('../README.md')).toContain(example)
  })

  it('runs: the status page dies, its circuit opens, the model reads the cached answer and its age; an uncached question goes to the mirror', async () => {
    const clock = manualClock()
    let up = true
    const tool = (name: string, answer: (region: string) => string) =>
      defineTool({
        name,
        description: name,
        input: z.object({ region: z.string() }),
        effect: 'read',
        execute: ({ region }) => {
          if (name === 'status_page' && !up) throw new ToolError('upstream_error', 'HTTP 503', { category: 'transient', retryable: true })
          return answer(region)
        },
      })
    const stack = statusStack(
      tool('status_page', (region) => `${region}: all systems go`),
      tool('status_mirror', (region) => `${region}: degraded`),
      clock,
    )
    const ask = async (region: string) => {
      const pending = stack.dispatch({ id: `q-${clock.now()}`, name: 'status_page', args: { region } })
      await clock.runAll()
      return pending
    }
    expect((await ask('eu')).content).toBe('eu: all systems go')
    await clock.advance(4 * 60_000)
    up = false
    await ask('eu')
    await ask('eu')
    const cached = await ask('eu')
    expect(cached.content).toBe('{"note":"cached 4 min ago","value":"eu: all systems go"}')
    const mirrored = await ask('us')
    expect(mirrored.content).toBe('{"note":"from status_mirror","value":"us: degraded"}')
  })
})
