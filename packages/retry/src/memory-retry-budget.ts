import { parseOptions } from '@shallot/core'
import { z } from 'zod'
import type { RetryBudgetStore } from './retry-budget-store.js'

/**
 * Options of {@link memoryRetryBudget}: `capacity` in tokens (default 500).
 *
 * @example
 * memoryRetryBudgetOptionsSchema.parse({}) // { capacity: 500 }
 */
export const memoryRetryBudgetOptionsSchema = z.object({ capacity: z.number().min(0).max(1_000_000_000).default(500) }).strict()

/** What {@link memoryRetryBudget} accepts. */
export type MemoryRetryBudgetOptions = z.input<typeof memoryRetryBudgetOptionsSchema>

/** An in-memory retry budget: a token bucket that starts full. */
export interface MemoryRetryBudget extends RetryBudgetStore {
  readonly capacity: number
  tryTake(tokens: number): boolean
  refill(tokens: number): void
  available(): number
}

/**
 * A token bucket in this process (AWS SDK standard mode: 500 tokens). Each `retry()` makes its own unless given one,
 * so pass the same instance to several stacks to make them share a budget.
 *
 * @example
 * const retryBudget = memoryRetryBudget({ capacity: 100 })
 * createStack({ middleware: [retry({ retryBudget })], tools })
 */
export function memoryRetryBudget(options?: MemoryRetryBudgetOptions): MemoryRetryBudget {
  const { capacity } = parseOptions('memoryRetryBudget()', memoryRetryBudgetOptionsSchema, options)
  let tokens = capacity
  return {
    capacity,
    tryTake(cost) {
      if (cost > tokens) return false
      tokens -= cost
      return true
    },
    refill(amount) {
      if (tokens < capacity) tokens = Math.min(capacity, tokens + amount)
    },
    available: () => tokens,
  }
}
