import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createAgent, memoryCheckpoints } from '@shallot/agent'
import { defineTool, ToolError } from '@shallot/core'
import { manualClock, scriptedModel } from '@shallot/testing'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { z } from 'zod'
import { runOrHandOff } from './handoff-example.js'

const read = (file: string) => readFileSync(new URL(file, import.meta.url), 'utf8')
const readme = read('../../README.md')

afterEach(() => {
  vi.unstubAllEnvs()
})

/** The first fenced block of `lang` after `heading`. */
function blockAfter(heading: string, lang: string): string {
  const at = readme.indexOf(heading)
  expect(at, `no heading ${heading}`).toBeGreaterThanOrEqual(0)
  const open = readme.indexOf(`\`\`\`${lang}\n`, at)
  return readme.slice(open + lang.length + 4, readme.indexOf('\n```\n', open + 1) + 1)
}

describe('README: the handoff a person can pick up', () => {
  it('shows the type-checked example verbatim (importing the published name)', () => {
    const example = read('./handoff-example.ts').replace("from '../index.js'", "from '@shallot/cli'")
    expect(blockAfter('### handoffOf', 'ts')).toBe(example)
  })

  it('runs: the handoff it writes is the one the README shows, with the key redacted', async () => {
    vi.stubEnv('STRIPE_KEY', 'rk_live_51HxYzAbCdEf')
    const lookup = defineTool({
      name: 'lookup_order',
      description: 'Look an order up',
      input: z.object({ order: z.number() }),
      effect: 'read',
      execute: ({ order }) => `order ${order}: 42.00 EUR, paid by card`,
    })
    const refund = defineTool({
      name: 'refund',
      description: 'Refund an order',
      input: z.object({ order: z.number(), amount: z.string() }),
      effect: 'write',
      execute: () => {
        throw new ToolError('permission_denied', 'Stripe refused key rk_live_51HxYzAbCdEf: refunds need the refund_write scope')
      },
    })
    const model = scriptedModel([
      { text: 'Looking the order up.', toolCalls: [{ name: 'lookup_order', args: { order: 7 } }] },
      { toolCalls: [{ name: 'refund', args: { order: 7, amount: '42.00' } }] },
      { text: 'The refund was refused.' },
    ])
    const agent = createAgent({
      model,
      tools: [lookup, refund],
      checkpoints: memoryCheckpoints(),
      clock: manualClock(),
      limits: { maxTurns: 2 },
    })
    const folder = mkdtempSync(join(tmpdir(), 'shallot-handoff-'))
    const said = await runOrHandOff(agent, 'refund-7', 'Refund order 7 to the card on file', folder)
    const file = join(folder, 'refund-7.handoff.md')
    expect(said).toBe(`stopped (fatal); the handoff is ${file}`)
    const text = readFileSync(file, 'utf8')
    expect(text).not.toContain('rk_live')
    expect(blockAfter('The handoff it writes', 'markdown')).toBe(text)
  })
})
