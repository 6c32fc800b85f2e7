import { readFileSync } from 'node:fs'
import { createStack, defineTool, type Stack, ToolError } from '@shallot/core'
import { retry } from '@shallot/retry'
import { manualClock, seededRandom } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { fallback } from './index.js'
import { forecastStack } from './readme-mirror-example.js'

const read = (file: string) => readFileSync(new URL(file, import.meta.url), 'utf8')

function forecastTools(primaryFails: () => boolean) {
  const calls = { primary: 0, mirror: 0 }
  const tool = (name: string, source: 'primary' | 'mirror') =>
    defineTool({
      name,
      description: name,
      input: z.object({ city: z.string() }),
      effect: 'read',
      execute: ({ city }) => {
        calls[source]++
        if (source === 'primary' && primaryFails())
          throw new ToolError('upstream_error', 'HTTP 503', { category: 'transient', retryable: true })
        return `${city}: rain (${source})`
      },
    })
  return { calls, forecast: tool('get_forecast', 'primary'), mirror: tool('get_forecast_mirror', 'mirror') }
}

describe('README: a mirror as good as the primary, with fallback inside retry', () => {
  it('shows the type-checked example verbatim (importing the published name)', () => {
    const example = read('./readme-mirror-example.ts').replace("from './index.js'", "from '@shallot/fallback'")
    expect(read('../README.md')).toContain(example)
  })

  it('a dead primary: the first failure is answered from the mirror at once — one primary request, no backoff', async () => {
    const clock = manualClock()
    const { calls, forecast, mirror } = forecastTools(() => true)
    const stack = forecastStack(forecast, mirror, clock)
    const pending = stack.dispatch({ id: 'c1', name: 'get_forecast', args: { city: 'Lyon' } })
    await clock.runAll()
    const result = await pending
    expect(result.ok).toBe(true)
    expect(result.content).toContain('Lyon: rain (mirror)')
    expect(calls).toEqual({ primary: 1, mirror: 1 })
    expect(clock.now()).toBe(0)
  })

  it('a healthy primary answers itself; the mirror is never asked', async () => {
    const clock = manualClock()
    const { calls, forecast, mirror } = forecastTools(() => false)
    const result = await forecastStack(forecast, mirror, clock).dispatch({ id: 'c1', name: 'get_forecast', args: { city: 'Lyon' } })
    expect(result.content).toBe('Lyon: rain (primary)')
    expect(calls).toEqual({ primary: 1, mirror: 0 })
  })

  it('outside retry (the default placement) the mirror answers only after the primary used up its retries', async () => {
    const clock = manualClock()
    const { calls, forecast, mirror } = forecastTools(() => true)
    let stack: Stack | undefined
    const outside = fallback({
      tools: { get_forecast: [{ from: 'tool', tool: 'get_forecast_mirror' }] },
      dispatch: (call, options) => (stack as Stack).dispatch(call, options),
    })
    stack = createStack({ tools: [forecast, mirror], clock, random: seededRandom(1), middleware: [outside, retry()] })
    const pending = stack.dispatch({ id: 'c1', name: 'get_forecast', args: { city: 'Lyon' } })
    await clock.runAll()
    expect((await pending).content).toContain('(mirror)')
    expect(calls).toEqual({ primary: 3, mirror: 1 })
    expect(clock.now()).toBeGreaterThan(0)
  })
})
