import { createStack, defineTool, ToolError } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { type RetryBudgetStore, retry } from './index.js'

/** A budget store whose tryTake answers `answer` (at once, or as a promise), and which counts nothing else. */
const budgetAnswering = (answer: () => unknown): RetryBudgetStore => ({
  tryTake: () => answer() as never,
  refill: () => {},
  available: () => 100,
})

async function executionsWith(store: RetryBudgetStore): Promise<number> {
  const clock = manualClock()
  let executions = 0
  const tool = defineTool({
    name: 'flaky',
    description: 'fails once, then answers',
    input: z.object({}),
    effect: 'read',
    execute: () => {
      executions++
      if (executions === 1) throw new ToolError('upstream_error', 'upstream answered 503')
      return 'ok'
    },
  })
  const stack = createStack({ tools: [tool], clock, middleware: [retry({ retryBudget: store })] })
  const pending = stack.dispatch({ id: 'c', name: 'flaky', args: {} })
  await clock.runAll()
  await pending
  return executions
}

describe('retry: a budget store answers yes with true, and only with true', () => {
  it.each([
    ['"yes"', () => 'yes'],
    ['"false"', () => 'false'],
    ['1', () => 1],
    ['an object', () => ({})],
    ['a promise of "yes"', async () => 'yes'],
    ['a promise of 1', async () => 1],
  ])('an answer of %s is no: the failure is not retried', async (_, answer) => {
    expect(await executionsWith(budgetAnswering(answer))).toBe(1)
  })

  it.each([
    ['true', () => true],
    ['a promise of true', async () => true],
  ])('an answer of %s lets the retry run', async (_, answer) => {
    expect(await executionsWith(budgetAnswering(answer))).toBe(2)
  })
})
