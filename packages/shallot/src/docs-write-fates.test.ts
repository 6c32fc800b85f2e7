import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { createRun, createStack, defineTool } from '@shallot/core'
import { manualClock, seededRandom } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createAgent, defaultMiddleware, defaultModelMiddleware } from './index.js'

// What the docs say about a write that failed with a 5xx, and where a refused-credentials stop comes from, checked
// against what the default stack and createAgent do.

const page = (path: string) => readFileSync(fileURLToPath(new URL(`../../../${path}`, import.meta.url)), 'utf8').replace(/\s+/g, ' ')
/** The text of a markdown section, from its heading to the next heading of any level. */
const section = (text: string, heading: string) => {
  const start = text.indexOf(heading)
  if (start < 0) throw new Error(`no section ${heading}`)
  const next = text.indexOf(' #', start + heading.length)
  return text.slice(start, next < 0 ? undefined : next)
}

/** A write that answers 503, with or without Retry-After, the first time; its repeat succeeds. */
async function twice(retryAfter: boolean) {
  let calls = 0
  const post = defineTool({
    name: 'post_invoice',
    description: 'Post an invoice',
    input: z.object({ invoice: z.string() }),
    effect: 'write',
    execute: () => {
      calls++
      if (calls === 1) throw Object.assign(new Error('HTTP 503'), { status: 503, headers: retryAfter ? { 'retry-after': '1' } : {} })
      return 'posted'
    },
  })
  const clock = manualClock()
  const stack = createStack({ tools: [post], clock, random: seededRandom(1), middleware: defaultMiddleware({ retry: false }) })
  const run = createRun({ id: 'r1' })
  const call = (id: string) => stack.dispatch({ id, name: 'post_invoice', args: { invoice: 'INV-1' } }, { run })
  const first = await call('c1')
  const second = await call('c2')
  return { first, second, calls }
}

describe('a write that failed with a 503', () => {
  it('with Retry-After: nothing was done, the key is released and the identical call runs; without: its outcome is unknown', async () => {
    const refused = await twice(true)
    expect(refused.first.error).toMatchObject({ code: 'upstream_error', safeToRepeat: true })
    expect(refused.second).toMatchObject({ ok: true, value: 'posted' })
    const unknown = await twice(false)
    expect(unknown.first.error).toMatchObject({ code: 'upstream_error', safeToRepeat: false })
    expect(unknown.second.error?.code).toBe('outcome_unknown')
    expect(unknown.calls).toBe(1)
  })

  it('is described that way in the idempotency README and docs/errors.md', () => {
    const readme = page('packages/idempotency/README.md')
    expect(readme).toContain('a 503 with `Retry-After`, a refused connection), or the tool is `idempotent`')
    expect(readme).toContain('(a timeout, a 500, 502 or 504, a 503 without `Retry-After`, a dropped connection')
    const errors = section(page('docs/errors.md'), '### `outcome_unknown`')
    expect(errors).toContain('a 503 without `Retry-After`')
    expect(errors).toContain('a 503 with `Retry-After`')
    expect(errors).not.toMatch(/a 5xx/)
  })
})

describe('a model provider that refuses the credentials', () => {
  it('stops createAgent with the default model stack as user_input_required (credentials), and docs/errors.md names every source of that stop', async () => {
    const model = {
      generate: async () => {
        throw Object.assign(new Error('Incorrect API key provided'), { status: 401 })
      },
    }
    const outcome = await createAgent({ model, tools: [], modelMiddleware: defaultModelMiddleware() }).run({ input: 'hi' })
    expect(outcome).toMatchObject({ status: 'stopped', error: { kind: 'user_input_required', details: { reason: 'credentials' } } })
    const row = page('docs/errors.md').split('| `user_input_required` |')[1]?.split(' | ')[0]
    for (const source of ['errorClassifier()', '`defaultModelMiddleware()`', '@shallot/langchain', '@shallot/ai-sdk'])
      expect(row).toContain(source)
  })
})
