import { readFileSync } from 'node:fs'
import { defineTool } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { crawler } from './readme-example.js'

const read = (file: string) => readFileSync(new URL(file, import.meta.url), 'utf8')

describe('README', () => {
  it('shows the type-checked example verbatim (importing the published name)', () => {
    const example = read('./readme-example.ts').replace("from './index.js'", "from '@shallot/bulkhead'")
    expect(read('../README.md')).toContain(example)
  })

  it('runs: 20 fetches to one host run 4 at a time with 10 waiting, 6 read overloaded; another host is not held up', async () => {
    const clock = manualClock()
    let running = 0
    let peak = 0
    const fetchPage = defineTool({
      name: 'fetch_page',
      description: 'Fetch a web page',
      input: z.object({ url: z.string() }),
      effect: 'read',
      execute: async ({ url }, { signal }) => {
        running++
        peak = Math.max(peak, running)
        await clock.sleep(1000, signal).finally(() => running--)
        return `<html>${url}</html>`
      },
    })
    const stack = crawler(fetchPage, clock)
    const slow = Array.from({ length: 20 }, (_, i) =>
      stack.dispatch({ id: `a${i}`, name: 'fetch_page', args: { url: `https://a.example/${i}` } }),
    )
    const other = stack.dispatch({ id: 'b', name: 'fetch_page', args: { url: 'https://b.example/' } })
    await clock.advance(1000)
    expect((await other).ok).toBe(true)
    await clock.runAll()
    const results = await Promise.all(slow)
    expect(results.filter((r) => r.ok)).toHaveLength(14)
    expect(results.filter((r) => r.error?.code === 'overloaded')).toHaveLength(6)
    expect(peak).toBe(5)
  })
})
