import { readFileSync } from 'node:fs'
import { createRun, defineTool, type ModelAdapter, ToolError } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { memoryPushbackStore } from './index.js'
import { pacedAgent } from './readme-agent-example.js'
import { searchStack } from './readme-example.js'
import { fleetWorker } from './readme-pushback-example.js'

const read = (file: string) => readFileSync(new URL(file, import.meta.url), 'utf8')

describe('README', () => {
  it.each(['./readme-example.ts', './readme-agent-example.ts', './readme-pushback-example.ts'])(
    'shows the type-checked example %s verbatim (importing the published name)',
    (file) => {
      const example = read(file).replace("from './index.js'", "from '@shallot/rate-limit'")
      expect(read('../README.md')).toContain(example)
    },
  )

  it('runs: 40 searches of one tenant at once: 20 at once, 10 more within a second, 10 refused; another tenant is not held up', async () => {
    const clock = manualClock()
    const ran: number[] = []
    const search = defineTool({
      name: 'search',
      description: 'Search the docs',
      input: z.object({ q: z.string() }),
      effect: 'read',
      execute: ({ q }) => {
        ran.push(clock.now())
        return `results for ${q}`
      },
    })
    const stack = searchStack(search, (runId) => runId.split('/')[0] ?? '', clock)
    const acme = createRun({ id: 'acme/1' })
    const calls = Array.from({ length: 40 }, (_, i) => stack.dispatch({ id: `a${i}`, name: 'search', args: { q: `${i}` } }, { run: acme }))
    const other = await stack.dispatch({ id: 'b', name: 'search', args: { q: 'b' } }, { run: createRun({ id: 'globex/1' }) })
    expect(other.ok).toBe(true)
    await clock.runAll()
    const results = await Promise.all(calls)
    expect(results.filter((r) => r.ok)).toHaveLength(30)
    expect(results.filter((r) => r.error?.code === 'rate_limited')).toHaveLength(10)
    expect(Math.max(...ran)).toBe(1000)
  })

  it('runs: one layer in both lists paces the model and the tool a second apart, each in its own bucket', async () => {
    const clock = manualClock()
    const searchedAt: number[] = []
    const askedAt: number[] = []
    const search = defineTool({
      name: 'search',
      description: 'Search the docs',
      input: z.object({ q: z.string() }),
      effect: 'read',
      execute: ({ q }) => {
        searchedAt.push(clock.now())
        return `results for ${q}`
      },
    })
    const turns = [
      { toolCalls: [{ id: 'a', name: 'search', args: { q: 'a' } }] },
      { toolCalls: [{ id: 'b', name: 'search', args: { q: 'b' } }] },
    ]
    const model: ModelAdapter = {
      name: 'gpt',
      generate: async () => {
        askedAt.push(clock.now())
        return turns[askedAt.length - 1] ?? { text: 'done', toolCalls: [] }
      },
    }
    const outcome = pacedAgent(model, [search], clock).run({ input: 'look it up' })
    await clock.runAll()
    expect(await outcome).toMatchObject({ status: 'completed', output: 'done' })
    expect(askedAt).toEqual([0, 1000, 2000])
    // The tool's bucket is not the model's: each search is its tool's first call in its second.
    expect(searchedAt).toEqual([0, 1000])
  })

  it('runs: two workers on one pushback store: one hears a 30 s Retry-After, the other sends nothing until it passes', async () => {
    const clock = manualClock()
    const pushback = memoryPushbackStore()
    const askedAt: Record<string, number[]> = { first: [], second: [] }
    const model = (name: 'first' | 'second'): ModelAdapter => ({
      name: 'gpt',
      generate: async () => {
        askedAt[name]?.push(clock.now())
        if (clock.now() < 30_000) {
          throw new ToolError('rate_limited', 'rate limited by the provider (429)', {
            category: 'transient',
            retryable: true,
            retryAfterMs: 30_000 - clock.now(),
            details: { status: 429 },
          })
        }
        return { text: 'done', toolCalls: [] }
      },
    })
    const first = fleetWorker(model('first'), [], pushback, clock).run({ input: 'a' })
    for (let i = 0; i < 20 && clock.pending === 0; i++) await new Promise((resolve) => setImmediate(resolve))
    const second = fleetWorker(model('second'), [], pushback, clock).run({ input: 'b' })
    await clock.runAll()
    expect((await first).status).toBe('completed')
    expect((await second).status).toBe('completed')
    expect(askedAt.first).toEqual([0, 30_000])
    expect(askedAt.second).toHaveLength(1)
    expect(askedAt.second?.[0]).toBeGreaterThanOrEqual(30_000)
  })
})
