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

  it('fails closed on a corrupt bucket: the take that finds it is refused, it is rewritten as empty, successes refill it', async () => {
    const prefix = freshPrefix()
    const warnings: string[] = []
    const logger: Logger = { debug() {}, info() {}, error() {}, warn: (_o, msg) => void warnings.push(msg ?? ''), child: () => logger }
    const budget = redisStores({ client, prefix, logger, retryBudget: { capacity: 10 } }).retryBudget
    const key = `${prefix}:{default}:retry-budget`
    for (const corrupt of ['lots', '-3', 'NaN', 'inf', '', '1e999']) {
      await client.set(key, corrupt)
      expect(await budget.available(), corrupt).toBe(0)
      expect(await budget.tryTake(1), corrupt).toBe(false)
      expect(await client.get(key)).toBe('10')
      await budget.refill(4)
      expect(await budget.available()).toBe(4)
      expect(await budget.tryTake(4)).toBe(true)
      expect(await budget.tryTake(1)).toBe(false)
    }
    await client.del(key)
    await client.hset(key, 'spent', '0') // another Redis type altogether
    expect(await budget.tryTake(1)).toBe(false)
    expect(await client.get(key)).toBe('10')
    await client.hset(`${prefix}:{default-2}:retry-budget`, 'x', '1')
    // Written at once (refillFlushMs 0): a refill that finds it corrupt rewrites it as empty, then refills.
    const other = redisStores({ client, prefix, logger, retryBudget: { name: 'default-2', capacity: 10, refillFlushMs: 0 } }).retryBudget
    await other.refill(3)
    expect(await other.available()).toBe(3)
    expect(warnings.length).toBeGreaterThan(0)
    expect(warnings.every((w) => w.includes('corrupt'))).toBe(true)
  })

  it('through a stack: a corrupt bucket means no retry, never a crash or a storm', async () => {
    const prefix = freshPrefix()
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
    const { retryBudget } = redisStores({ client, prefix, clock: systemClock, retryBudget: { capacity: 100 } })
    await client.set(`${prefix}:{default}:retry-budget`, '{"spent":0}')
    const stack = createStack({ clock: manualClock(), tools: [search], middleware: [retry({ retryBudget })] })
    const result = await stack.dispatch({ id: 'c', name: 'search', args: { q: 'x' } })
    expect(result).toMatchObject({ ok: false, error: { code: 'upstream_error' } })
    expect(result.trace).toContainEqual(expect.objectContaining({ type: 'retry.stopped', reason: 'retry_budget_empty' }))
    expect(executions).toBe(1)
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
