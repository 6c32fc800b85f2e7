/**
 * Where a retry budget (a token bucket against retry storms) keeps its tokens. Methods may be async, so a
 * shared store (Redis) can back one budget for a fleet of workers; the in-memory one answers synchronously.
 *
 * @example
 * const shared: RetryBudgetStore = memoryRetryBudget({ maxTokens: 500 })
 * const stacks = [retry({ retryBudget: shared }), retry({ retryBudget: shared })]
 */
export interface RetryBudgetStore {
  /**
   * Takes `tokens` if that many are left and answers true; otherwise takes nothing and answers false.
   * Only `true` lets a retry run: any other answer, a throw or a rejection is no (the budget fails closed).
   */
  tryTake(tokens: number): boolean | Promise<boolean>
  /** Puts `tokens` back, never past the capacity. */
  refill(tokens: number): void | Promise<void>
  /** Tokens left now. */
  available(): number | Promise<number>
}

/**
 * True when `value` has the three methods of a {@link RetryBudgetStore}.
 *
 * @example
 * isRetryBudgetStore(memoryRetryBudget()) // true
 */
export function isRetryBudgetStore(value: unknown): value is RetryBudgetStore {
  if (typeof value !== 'object' || value === null) return false
  const store = value as Record<string, unknown>
  return typeof store.tryTake === 'function' && typeof store.refill === 'function' && typeof store.available === 'function'
}
