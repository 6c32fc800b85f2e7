import { createStackFromConfig, loadConfig } from '@shallot/config'
import { defineTool } from '@shallot/core'
import { memoryRetryBudget } from '@shallot/retry'
import { manualClock } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { hedgingDefinition } from './index.js'

describe('hedging in a config file', () => {
  it('is named in the stack, and its hedges spend the stack’s shared retry budget', async () => {
    const clock = manualClock()
    let n = 0
    const search = defineTool({
      name: 'search',
      description: 'search',
      input: z.object({}),
      effect: 'read',
      execute: async (_args, { signal }) => {
        await clock.sleep(++n === 1 ? 1000 : 10, signal)
        return n
      },
    })
    const retryBudget = memoryRetryBudget({ capacity: 50 })
    const config = await loadConfig({ stack: ['retry', { hedging: { delayMs: 100 } }] }, { middleware: [hedgingDefinition] })
    const stack = createStackFromConfig(config, { tools: [search], clock, stores: { retryBudget } })
    const pending = stack.dispatch({ id: '1', name: 'search', args: {} })
    await clock.runAll()
    expect((await pending).value).toBe(2)
    expect(retryBudget.available()).toBe(46)
    await expect(loadConfig({ stack: [{ hedging: { effects: ['write'] } }] }, { middleware: [hedgingDefinition] })).rejects.toThrow(
      /effects/,
    )
  })
})
