import { createAgent } from '@shallot/agent'
import { defineTool, ToolError } from '@shallot/core'
import { memoryPushbackStore } from '@shallot/rate-limit'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createStackFromConfig, loadConfig } from './index.js'

const search = defineTool({ name: 'search', description: 'search', input: z.object({}), effect: 'read', execute: () => 'hits' })

describe('rate-limit in a config file: the shared pushback', () => {
  it('takes the host’s pushback store (stores.pushback): one stack’s 429 holds the model for another stack on the store', async () => {
    const pushback = memoryPushbackStore()
    const config = await loadConfig({ stack: [], modelMiddleware: [{ 'rate-limit': { limit: 100, maxWaitMs: 0 } }] })
    const asked: string[] = []
    const agentOf = (name: string, fail: boolean) => {
      const stack = createStackFromConfig(config, { tools: [search], stores: { pushback } })
      const model = {
        name: 'gpt',
        async generate() {
          asked.push(name)
          if (fail) {
            throw new ToolError('rate_limited', 'rate limited by the provider (429)', {
              category: 'transient',
              retryAfterMs: 30_000,
              details: { status: 429 },
            })
          }
          return { text: 'done', toolCalls: [] }
        },
      }
      return createAgent({ model, stack, modelMiddleware: stack.modelMiddleware })
    }
    expect((await agentOf('first', true).run({ input: 'one' })).status).toBe('stopped')
    const held = await agentOf('second', false).run({ input: 'two' })
    expect(held.status === 'stopped' && held.error.cause).toMatchObject({ code: 'rate_limited', details: { pushback: true } })
    expect(asked).toEqual(['first'])
  })
})
