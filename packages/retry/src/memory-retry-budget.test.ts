import { createStack, defineTool, OptionsError, type StackEvent, ToolError } from '@shallot/core'
import { manualClock, seededRandom } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { memoryRetryBudget, type RetryBudgetStore, retry } from './index.js'

function failingTool(error: () => ToolError, successes = 0) {
  const seen = { executions: 0 }
  const tool = defineTool({
    name: 'search',
    description: 'fails',
    input: z.object({ q: z.string() }),
    effect: 'read',
    execute: () => {
      seen.executions++
      if (seen.executions <= successes) return 'hit'
      throw error()
    },
  })
  return { tool, seen }
}

const unavailable = () => new ToolError('upstream_error', 'upstream answered 503')
const timedOut = () => new ToolError('timeout', "Tool 'search' timed out after 5s")

/** Dispatches `count` calls at once and moves virtual time until every one settled. */
async function storm(stack: ReturnType<typeof createStack>, clock: ReturnType<typeof manualClock>, count: number) {
  const calls = Array.from({ length: count }, (_, i) => stack.dispatch({ id: `c${i}`, name: 'search', args: { q: `q${i}` } }))
  await clock.runAll()
  return Promise.all(calls)
}

describe('memoryRetryBudget', () => {
  it('starts full, refuses what it cannot pay, and refills up to its capacity', () => {
    const budget = memoryRetryBudget({ maxTokens: 12 })
    expect([budget.tryTake(5), budget.tryTake(5), budget.tryTake(5)]).toEqual([true, true, false])
    expect(budget.available()).toBe(2)
    budget.refill(4)
    expect(budget.available()).toBe(6)
    budget.refill(100)
    expect(budget.available()).toBe(12)
  })

  it('defaults to the AWS standard-mode capacity of 500 tokens', () => {
    expect(memoryRetryBudget().available()).toBe(500)
  })

  it('rejects a bad capacity, naming the option', () => {
    expect(() => memoryRetryBudget({ maxTokens: -1 })).toThrow(OptionsError)
    expect(() => memoryRetryBudget({ maxTokens: Number.NaN })).toThrow('memoryRetryBudget(): option maxTokens')
    expect(() => memoryRetryBudget({ maxTokens: 5, capacity: 5 })).toThrow('give maxTokens only')
  })

  it('still takes the deprecated capacity, as maxTokens', () => {
    const budget = memoryRetryBudget({ capacity: 7 })
    expect([budget.maxTokens, budget.capacity, budget.available()]).toEqual([7, 7, 7])
  })
})

describe('retry budget through a real stack', () => {
  it('1,000 concurrent failing calls spend no more retries than the budget allows (500 tokens / 5 = 100 retries)', async () => {
    const clock = manualClock()
    const { tool, seen } = failingTool(unavailable)
    const stack = createStack({ middleware: [retry()], tools: [tool], clock, random: seededRandom(1) })
    const events: StackEvent[] = []
    stack.on((event) => events.push(event))
    const results = await storm(stack, clock, 1000)
    const retries = events.filter((e) => e.type === 'retry.scheduled').length
    expect(retries).toBe(100)
    expect(seen.executions).toBe(1000 + 100)
    expect(results.every((r) => !r.ok && r.error?.code === 'upstream_error')).toBe(true)
    expect(events.filter((e) => e.reason === 'retry_budget_empty').length).toBeGreaterThanOrEqual(900)
  })

  it('charges 10 tokens per timeout retry: 1,000 timing-out calls get 50 retries', async () => {
    const clock = manualClock()
    const { tool, seen } = failingTool(timedOut)
    const stack = createStack({ middleware: [retry()], tools: [tool], clock, random: seededRandom(2) })
    await storm(stack, clock, 1000)
    expect(seen.executions).toBe(1050)
  })

  it('returns the original error soft when the budget is empty, noting why on the trace', async () => {
    const clock = manualClock()
    const { tool, seen } = failingTool(unavailable)
    const stack = createStack({ middleware: [retry({ retryBudget: memoryRetryBudget({ capacity: 0 }) })], tools: [tool], clock })
    const [result] = await storm(stack, clock, 1)
    expect(seen.executions).toBe(1)
    expect(result).toMatchObject({ ok: false, attempts: 1, error: { code: 'upstream_error', message: 'upstream answered 503' } })
    expect(result?.trace).toMatchObject([{ type: 'retry.stopped', reason: 'retry_budget_empty', code: 'upstream_error' }])
  })

  it('is shared by the stacks given the same instance', async () => {
    const retryBudget = memoryRetryBudget({ capacity: 10 })
    const clock = manualClock()
    const a = failingTool(unavailable)
    const b = failingTool(unavailable)
    const stackA = createStack({ middleware: [retry({ retryBudget })], tools: [a.tool], clock })
    const stackB = createStack({ middleware: [retry({ retryBudget })], tools: [b.tool], clock })
    await Promise.all([storm(stackA, clock, 5), storm(stackB, clock, 5)])
    expect(a.seen.executions + b.seen.executions).toBe(10 + 2)
  })

  it('gives a token back per success', async () => {
    const retryBudget = memoryRetryBudget({ capacity: 10 })
    const clock = manualClock()
    const { tool } = failingTool(unavailable, 1)
    const stack = createStack({ middleware: [retry({ retryBudget })], tools: [tool], clock })
    retryBudget.tryTake(5)
    await storm(stack, clock, 1)
    expect(retryBudget.available()).toBe(6)
  })

  it('works with an async store, and fails closed (no retry) when the store throws', async () => {
    const inner = memoryRetryBudget({ capacity: 5 })
    const asyncStore: RetryBudgetStore = {
      tryTake: async (n) => inner.tryTake(n),
      refill: async (n) => inner.refill(n),
      available: async () => inner.available(),
    }
    const clock = manualClock()
    const ok = failingTool(unavailable)
    await storm(createStack({ middleware: [retry({ retryBudget: asyncStore })], tools: [ok.tool], clock }), clock, 3)
    expect(ok.seen.executions).toBe(3 + 1)

    const broken: RetryBudgetStore = {
      tryTake: () => Promise.reject(new Error('redis down')),
      refill: () => Promise.reject(new Error('redis down')),
      available: () => 0,
    }
    const down = failingTool(unavailable, 1)
    const brokenStack = createStack({ middleware: [retry({ retryBudget: broken })], tools: [down.tool], clock })
    const [success, failure] = await storm(brokenStack, clock, 2)
    expect(success?.ok).toBe(true)
    expect(down.seen.executions).toBe(2)
    expect(failure).toMatchObject({ ok: false, attempts: 1, error: { code: 'upstream_error' } })
  })

  it('retries without limit from the bucket when retryBudget is false', async () => {
    const clock = manualClock()
    const { tool, seen } = failingTool(unavailable)
    await storm(createStack({ middleware: [retry({ retryBudget: false })], tools: [tool], clock }), clock, 300)
    expect(seen.executions).toBe(900)
  })
})
