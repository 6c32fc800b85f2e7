import { optionsParser } from '@shallot/core/kit'
import { z } from 'zod'
import type { RetryBudgetStore } from './retry-budget-store.js'

const tokens = z.number().min(0).max(1_000_000_000)

/**
 * Options of {@link memoryRetryBudget}: `maxTokens`, the bucket's size (default 500).
 *
 * @example
 * memoryRetryBudgetOptionsSchema.parse({}) // { maxTokens: 500 }
 */
export const memoryRetryBudgetOptionsSchema = z
  .strictObject({
    /** The most tokens the bucket holds; it starts full. Default 500 (AWS SDK standard mode). */
    maxTokens: tokens.optional(),
    /** @deprecated Use `maxTokens`; `capacity` goes in the next minor version. */
    capacity: tokens.optional(),
  })
  .superRefine((o, check) => {
    if (o.maxTokens !== undefined && o.capacity !== undefined)
      check.addIssue({ code: 'custom', path: ['capacity'], message: 'give maxTokens only (capacity is its old name)' })
  })
  .transform((o) => ({ maxTokens: o.maxTokens ?? o.capacity ?? 500 }))

/** What {@link memoryRetryBudget} accepts. */
export type MemoryRetryBudgetOptions = z.input<typeof memoryRetryBudgetOptionsSchema>

const parseMemoryRetryBudgetOptions = optionsParser('memoryRetryBudget()', memoryRetryBudgetOptionsSchema)

/** An in-memory retry budget: a token bucket that starts full. */
export interface MemoryRetryBudget extends RetryBudgetStore {
  /** The most tokens the bucket holds. */
  readonly maxTokens: number
  /** @deprecated Use `maxTokens`; `capacity` goes in the next minor version. */
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
 * const retryBudget = memoryRetryBudget({ maxTokens: 100 })
 * createStack({ middleware: [retry({ retryBudget })], tools })
 */
export function memoryRetryBudget(options?: MemoryRetryBudgetOptions): MemoryRetryBudget {
  const { maxTokens: capacity } = parseMemoryRetryBudgetOptions(options)
  let tokens = capacity
  return {
    maxTokens: capacity,
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
