import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { defineTool, ToolError } from '@shallot/core'
import { manualClock, scriptedModel } from '@shallot/testing'
import { defaultMiddleware } from 'shallot'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { runWithTimeline } from './readme-example.js'

const read = (file: string) => readFileSync(new URL(file, import.meta.url), 'utf8')

describe('README: a run, as a picture', () => {
  it('shows the type-checked example verbatim (importing the published name)', () => {
    const example = read('./readme-example.ts').replace("from '../index.js'", "from '@shallot/cli'")
    expect(read('../../README.md')).toContain(example)
  })

  it('runs: a retried call and a soft error end up in the page, with turn times on the run clock', async () => {
    const clock = manualClock()
    let calls = 0
    const lookup = defineTool({
      name: 'lookup',
      description: 'look an order up',
      input: z.object({ order: z.string() }),
      effect: 'read',
      execute: ({ order }) => {
        calls++
        if (calls === 1) throw Object.assign(new Error('Service Unavailable'), { status: 503 })
        if (order === 'ORD-0') throw new ToolError('not_found', `no order ${order}`)
        return `${order}: shipped`
      },
    })
    const html = join(mkdtempSync(join(tmpdir(), 'shallot-readme-')), 'run.html')
    const model = scriptedModel([
      {
        text: 'Look both up.',
        toolCalls: [
          { name: 'lookup', args: { order: 'ORD-1' } },
          { name: 'lookup', args: { order: 'ORD-0' } },
        ],
      },
      { text: 'ORD-1 shipped; ORD-0 does not exist.' },
    ])
    const pending = runWithTimeline(
      { model, tools: [lookup], clock, middleware: defaultMiddleware({ timeout: { ms: 1000 } }) },
      'where are my orders?',
      html,
    )
    await clock.runAll()
    const record = await pending
    expect(record.status).toBe('completed')
    expect(record.turns[0]?.calls.map((c) => [c.attempts, c.result?.ok])).toEqual([
      [2, true],
      [1, false],
    ])
    const page = readFileSync(html, 'utf8')
    expect(page.match(/<g class="call"/g)).toHaveLength(2)
    expect(page).toContain('data-event="retry.scheduled"')
    expect(page).toContain('✗ not_found')
    expect(page).toContain('ORD-1 shipped; ORD-0 does not exist.')
  })
})
