import { fileURLToPath } from 'node:url'
import { createStackFromConfig, loadConfig } from '@shallot/config'
import { defineTool, type ToolResult } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'

// The example config beside package.json names this package; @shallot/config imports it by that name.
const file = fileURLToPath(new URL('../shallot.yaml', import.meta.url))

describe('shallot.yaml', () => {
  it('loads this package by name, with the options the file gives it', async () => {
    const config = await loadConfig(file)
    expect(config.layers.map((l) => l.name)).toEqual(['panic-catcher', 'retry', '@acme/shallot-rate-limit', 'timeout'])
    expect(config.layers[2]?.base.raw).toEqual({ rps: 5, burst: 2 })
  })

  it('runs in the stack: retry waits out the refusal, send_email gets its own stricter limit', async () => {
    const clock = manualClock()
    const tool = (name: string) =>
      defineTool({ name, description: name, input: z.object({}), effect: 'idempotent', execute: async () => `${name} ok` })
    const stack = createStackFromConfig(await loadConfig(file), { tools: [tool('search'), tool('send_email')], clock })
    let ids = 0
    const call = async (name: string): Promise<ToolResult> => {
      const pending = stack.dispatch({ id: `c${++ids}`, name, args: {} })
      await clock.runAll()
      return pending
    }
    const searches = [await call('search'), await call('search'), await call('search')]
    expect(searches.map((r) => [r.ok, r.attempts])).toEqual([
      [true, 1],
      [true, 1],
      [true, 2],
    ])
    const searchRetry = searches[2]?.trace.find((e) => e.type === 'retry.scheduled')
    expect(searchRetry).toMatchObject({ code: 'rate_limited' })
    expect(searchRetry?.delayMs).toBeGreaterThanOrEqual(200)
    const emails = [await call('send_email'), await call('send_email')]
    expect(emails.map((r) => [r.ok, r.attempts])).toEqual([
      [true, 1],
      [true, 2],
    ])
    expect(emails[1]?.trace.find((e) => e.type === 'retry.scheduled')?.delayMs).toBeGreaterThanOrEqual(1000)
  })
})
