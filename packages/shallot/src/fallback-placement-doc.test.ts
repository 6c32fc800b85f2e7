// packages/fallback/README.md's "With defaultMiddleware()" sample, run: where the fallback layer goes in the default
// stack, and why appending it (innermost) is not the same.
import { readFileSync } from 'node:fs'
import { defineTool } from '@shallot/core'
import { manualClock, seededRandom } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
// readme:start
import { type AnyTool, type Clock, createStack, DEFAULT_ORDER, defaultMiddleware, fallback, type Stack, systemClock } from './index.js'

/** The default stack, with status_page answered from its last good answer, else its mirror, when it is down. */
export function defaultStatusStack(statusPage: AnyTool, statusMirror: AnyTool, clock: Clock = systemClock): Stack {
  let stack: Stack
  const answerFromElsewhere = fallback({
    tools: { status_page: [{ from: 'cache' }, { from: 'tool', tool: 'status_mirror' }] },
    dispatch: (call, options) => stack.dispatch(call, options),
  })
  const middleware = defaultMiddleware()
  middleware.splice(DEFAULT_ORDER.indexOf('idempotency'), 0, answerFromElsewhere)
  stack = createStack({ tools: [statusPage, statusMirror], clock, middleware })
  return stack
}
// readme:end

const source = readFileSync(new URL(import.meta.url), 'utf8')
const sample = (source.split('// readme:start\n')[1] ?? '').split('// readme:end')[0] ?? ''

/** status_page answers until `down`, then throws what an HTTP client throws for a 503; the mirror always answers. */
function statusTools() {
  const state = { down: false }
  const tool = (name: string, answer: (region: string) => string) =>
    defineTool({
      name,
      description: name,
      input: z.object({ region: z.string() }),
      effect: 'read',
      execute: ({ region }) => {
        if (name === 'status_page' && state.down) throw Object.assign(new Error('Service Unavailable'), { status: 503 })
        return answer(region)
      },
    })
  return { state, page: tool('status_page', (r) => `${r}: all systems go`), mirror: tool('status_mirror', (r) => `${r}: degraded`) }
}

async function ask(stack: Stack, clock: ReturnType<typeof manualClock>, region: string) {
  const pending = stack.dispatch({ id: `q-${clock.now()}-${region}`, name: 'status_page', args: { region } })
  await clock.runAll()
  return pending
}

describe('packages/fallback/README.md: the fallback layer in the default stack', () => {
  it('shows the sample verbatim (importing the published name)', () => {
    expect(sample).toContain('export function defaultStatusStack')
    const readme = readFileSync(new URL('../../fallback/README.md', import.meta.url), 'utf8')
    expect(readme).toContain(sample.replace("from './index.js'", "from 'shallot'"))
  })

  it('just before idempotency: a dead status page is answered from its cache, then an uncached question from the mirror', async () => {
    const clock = manualClock()
    const { state, page, mirror } = statusTools()
    const stack = defaultStatusStack(page, mirror, clock)
    expect((await ask(stack, clock, 'eu')).content).toBe('eu: all systems go')
    await clock.advance(4 * 60_000)
    state.down = true
    expect((await ask(stack, clock, 'eu')).content).toBe('{"note":"cached 4 min ago","value":"eu: all systems go"}')
    expect((await ask(stack, clock, 'us')).content).toBe('{"note":"from status_mirror","value":"us: degraded"}')
  })

  it('appended innermost instead, it never falls back: the model reads the 503 as a soft error', async () => {
    const clock = manualClock()
    const { state, page, mirror } = statusTools()
    let stack: Stack | undefined
    const innermost = fallback({
      tools: { status_page: [{ from: 'cache' }, { from: 'tool', tool: 'status_mirror' }] },
      dispatch: (call, options) => (stack as Stack).dispatch(call, options),
    })
    stack = createStack({ tools: [page, mirror], clock, random: seededRandom(1), middleware: [...defaultMiddleware(), innermost] })
    expect((await ask(stack, clock, 'eu')).ok).toBe(true)
    state.down = true
    const result = await ask(stack, clock, 'eu')
    expect(result.ok).toBe(false)
    expect(result.error?.code).toBe('upstream_error')
  })
})
