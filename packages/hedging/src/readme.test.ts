import { readFileSync } from 'node:fs'
import { defineTool } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { searchStack } from './readme-example.js'

const read = (file: string) => readFileSync(new URL(file, import.meta.url), 'utf8')

describe('README', () => {
  it('shows the type-checked example verbatim (importing the published name)', () => {
    const example = read('./readme-example.ts').replace("from './index.js'", "from '@shallot/hedging'")
    expect(read('../README.md')).toContain(example)
  })

  it('runs: a search stuck for 2 s is answered by its hedge at 300 + 100 ms', async () => {
    const clock = manualClock()
    let executions = 0
    const search = defineTool({
      name: 'search',
      description: 'Search the docs',
      input: z.object({ q: z.string() }),
      effect: 'read',
      execute: async ({ q }, { signal }) => {
        const n = ++executions
        await clock.sleep(n === 1 ? 2000 : 100, signal)
        return `hits for ${q} (attempt ${n})`
      },
    })
    const pending = searchStack(search, clock).dispatch({ id: 'c1', name: 'search', args: { q: 'shallots' } })
    await clock.runAll()
    const result = await pending
    expect(result.content).toBe('hits for shallots (attempt 2)')
    expect(result.durationMs).toBe(400)
  })
})
