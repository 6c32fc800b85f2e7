import { createStackFromConfig, loadConfig } from '@shallot/config'
import { defineTool } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { bulkheadDefinition } from './index.js'

describe('bulkhead in a config file', () => {
  it('is named in the stack with file options, and refuses bad ones naming the option', async () => {
    const clock = manualClock()
    const slow = defineTool({
      name: 'slow',
      description: 'slow',
      input: z.object({}),
      effect: 'read',
      execute: (_args, { signal }) => clock.sleep(100, signal).then(() => 'done'),
    })
    const config = await loadConfig({ stack: [{ bulkhead: { limit: 1, queue: 0 } }, 'timeout'] }, { middleware: [bulkheadDefinition] })
    const stack = createStackFromConfig(config, { tools: [slow], clock })
    const calls = [stack.dispatch({ id: '1', name: 'slow', args: {} }), stack.dispatch({ id: '2', name: 'slow', args: {} })]
    await clock.runAll()
    const [first, second] = await Promise.all(calls)
    expect(first?.value).toBe('done')
    expect(second?.error?.code).toBe('overloaded')
    await expect(loadConfig({ stack: [{ bulkhead: { limit: 0 } }] }, { middleware: [bulkheadDefinition] })).rejects.toThrow(/limit/)
  })
})
