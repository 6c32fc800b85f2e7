import { createStack, defineTool, type Logger, systemClock, ToolError } from '@shallot/core'
import { retry } from '@shallot/retry'
import { manualClock, seededRandom } from '@shallot/testing'
import type { Redis } from 'ioredis'
import { beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { redisStores } from './index.js'
import { useRedis } from './test-support/redis-fixture.js'

const fixture = useRedis()
let client: Redis
beforeAll(() => {
  client = fixture.client
})
let prefixes = 0
const freshPrefix = () => `r${++prefixes}`

describe('redis retry budget', () => {
  it('starts full, refuses what it cannot pay, and refills up to its capacity', async () => {
    const budget = redisStores({ client, prefix: freshPrefix(), retryBudget: { capacity: 12 } }).retryBudget
    expect(await budget.available()).toBe(12)
    expect([await budget.tryTake(5), await budget.tryTake(5), await budget.tryTake(5)]).toEqual([true, true, false])
    expect(await budget.available()).toBe(2)
    await budget.refill(4)
    expect(await budget.available()).toBe(6)
    await budget.refill(100)
    expect(await budget.available()).toBe(12)
  })

  it('is one bucket for every worker: 60 concurrent takes of 5 from three workers on 100 tokens succeed exactly 20 times', async () => {
    const prefix = freshPrefix()
    const budgets = [0, 1, 2].map(() => redisStores({ client, prefix, retryBudget: { capacity: 100 } }).retryBudget)
    const taken = await Promise.all(Array.from({ length: 60 }, (_, i) => budgets[i % 3]?.tryTake(5)))
    expect(taken.filter(Boolean)).toHaveLength(20)
    expect(await budgets[1]?.available()).toBe(0)
  })

  it('keeps budgets of different names apart', async () => {
    const prefix = freshPrefix()
    const a = redisStores({ client, prefix, retryBudget: { name: 'search', capacity: 5 } }).retryBudget
    const b = redisStores({ client, prefix, retryBudget: { name: 'billing', capacity: 5 } }).retryBudget
    expect(await a.tryTake(5)).toBe(true)
    expect(await b.tryTake(5)).toBe(true)
  })

  it('treats a corrupt bucket as full and logs it', async () => {
    const prefix = freshPrefix()
    const warnings: string[] = []
    const logger: Logger = { debug() {}, info() {}, error() {}, warn: (_o, msg) => void warnings.push(msg ?? ''), child: () => logger }
    const budget = redisStores({ client, prefix, logger, retryBudget: { capacity: 10 } }).retryBudget
    await client.set(`${prefix}:{default}:retry-budget`, 'lots')
    expect(await budget.available()).toBe(10)
    expect(await budget.tryTake(10)).toBe(true)
    await client.set(`${prefix}:{default}:retry-budget`, '-3')
    expect(await budget.tryTake(1)).toBe(true)
    expect(await budget.available()).toBe(9)
    // Read by available(), then by the take script twice: each reading notices and reports it.
    expect(warnings).toHaveLength(3)
    expect(warnings.every((w) => w.includes('corrupt'))).toBe(true)
  })

  it('caps retries fleet-wide through real stacks: two workers share 10 tokens, so 10 failing calls get 2 retries in all', async () => {
    const prefix = freshPrefix()
    const clock = manualClock()
    let executions = 0
    const search = defineTool({
      name: 'search',
      description: 'search',
      input: z.object({ q: z.string() }),
      effect: 'read',
      execute: () => {
        executions++
        throw new ToolError('upstream_error', 'upstream answered 503')
      },
    })
    const stacks = [1, 2].map(() => {
      // The store's own timeouts run on real time: a virtual clock moved by runAll() would expire a
      // Redis round trip that is still on the wire, and fail the take closed.
      const { retryBudget } = redisStores({ client, prefix, clock: systemClock, retryBudget: { capacity: 10 } })
      return createStack({ clock, random: seededRandom(1), tools: [search], middleware: [retry({ retryBudget })] })
    })
    const calls = Array.from({ length: 10 }, (_, i) => stacks[i % 2]?.dispatch({ id: `c${i}`, name: 'search', args: { q: `q${i}` } }))
    // Each retry's take is a real round trip and each backoff a virtual sleep: move time until all settle.
    let settled = false
    const all = Promise.all(calls).then((results) => {
      settled = true
      return results
    })
    while (!settled) {
      await clock.runAll()
      await new Promise((resolve) => setImmediate(resolve))
    }
    const results = await all
    expect(results.every((r) => r?.ok === false)).toBe(true)
    expect(executions).toBe(10 + 2)
  })
})
