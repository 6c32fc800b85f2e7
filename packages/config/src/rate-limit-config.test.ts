import { createAgent } from '@shallot/agent'
import { defineTool } from '@shallot/core'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createStackFromConfig, loadConfig } from './index.js'

const search = defineTool({ name: 'search', description: 'search', input: z.object({}), effect: 'read', execute: () => 'hits' })

describe('rate-limit in a config file', () => {
  it('is named in the stack: past the limit a call reads rate_limited; bad options are refused naming them', async () => {
    const stack = createStackFromConfig(await loadConfig({ stack: [{ 'rate-limit': { limit: 1, perMs: 60_000, maxWaitMs: 0 } }] }), {
      tools: [search],
    })
    expect((await stack.dispatch({ id: '1', name: 'search', args: {} })).ok).toBe(true)
    const refused = await stack.dispatch({ id: '2', name: 'search', args: {} })
    expect(refused.error).toMatchObject({ code: 'rate_limited', safeToRepeat: true })
    expect(refused.error?.retryAfterMs).toBeGreaterThan(59_000)
    await expect(loadConfig({ stack: [{ 'rate-limit': { limit: -1 } }] })).rejects.toThrow(/limit/)
    await expect(loadConfig({ stack: [{ 'rate-limit': { limit: 5, key: 'tenant' } }] })).rejects.toThrow(/key/)
  })

  it('limits model calls from modelMiddleware:, and every layer takes the host’s shared store', async () => {
    const asked: string[] = []
    const rateLimit = {
      acquire(key: string) {
        asked.push(key)
        return asked.length === 1 ? { admitted: true, waitMs: 0 } : { admitted: false, waitMs: 5_000 }
      },
    }
    const config = await loadConfig({ stack: [], modelMiddleware: [{ 'rate-limit': { limit: 1, maxWaitMs: 0 } }] })
    const stack = createStackFromConfig(config, { tools: [search], stores: { rateLimit } })
    const model = { name: 'gpt', generate: async () => ({ text: 'done', toolCalls: [] }) }
    const agent = createAgent({ model, stack, modelMiddleware: stack.modelMiddleware })
    expect((await agent.run({ input: 'one' })).status).toBe('completed')
    const refused = await agent.run({ input: 'two' })
    // The store's 5 s is more than a limit of 1 a second can make anyone wait: the refusal says 1 s, the layer's own bound.
    expect(refused.status === 'stopped' && refused.error.cause).toMatchObject({ code: 'rate_limited', retryAfterMs: 1_000 })
    expect(asked).toEqual(['model:gpt', 'model:gpt'])
  })
})
