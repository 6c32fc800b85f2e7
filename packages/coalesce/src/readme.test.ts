import { readFileSync } from 'node:fs'
import { createRun, defineTool } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { searchStack } from './readme-example.js'

const read = (file: string) => readFileSync(new URL(file, import.meta.url), 'utf8')

describe('README', () => {
  it('shows the type-checked example verbatim (importing the published name)', () => {
    const example = read('./readme-example.ts').replace("from './index.js'", "from '@shallot/coalesce'")
    expect(read('../README.md')).toContain(example)
  })

  it('runs: 50 identical searches of one tenant run once, another tenant gets its own, a write-free stack', async () => {
    const clock = manualClock()
    const executions: string[] = []
    const search = defineTool({
      name: 'search_docs',
      description: 'Search the documentation',
      input: z.object({ query: z.string() }),
      effect: 'read',
      execute: async ({ query }, { signal }) => {
        executions.push(query)
        await clock.sleep(300, signal)
        return [`${query}: getting started`]
      },
    })
    const stack = searchStack(search, clock)
    const ask = (tenant: string, id: string) =>
      stack.dispatch({ id, name: 'search_docs', args: { query: 'install' } }, { run: createRun({ state: { tenant } }) })
    const acme = Array.from({ length: 50 }, (_, i) => ask('acme', `a${i}`))
    const globex = ask('globex', 'g')
    await clock.advance(300)
    const results = await Promise.all([...acme, globex])
    expect(results.every((r) => r.ok && r.content === '["install: getting started"]')).toBe(true)
    expect(executions).toEqual(['install', 'install'])
  })
})
