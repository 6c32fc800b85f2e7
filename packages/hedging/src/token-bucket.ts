/**
 * Where hedges take their tokens: the same three methods as `@shallot/retry`'s `RetryBudgetStore`,
 * so the retry budget (in memory, or shared through Redis) can be passed as it is and hedges and
 * retries drain one bucket.
 */
export interface HedgeBudgetStore {
  /** Takes `tokens` if that many are left and answers true; otherwise takes nothing and answers false. */
  tryTake(tokens: number): boolean | Promise<boolean>
  /** Puts `tokens` back, never past the capacity. */
  refill(tokens: number): void | Promise<void>
  /** Tokens left now. */
  available(): number | Promise<number>
}

/** True when `value` has the three methods of a {@link HedgeBudgetStore}. */
export function isHedgeBudgetStore(value: unknown): value is HedgeBudgetStore {
  if (typeof value !== 'object' || value === null) return false
  const store = value as Record<string, unknown>
  return typeof store.tryTake === 'function' && typeof store.refill === 'function' && typeof store.available === 'function'
}

/** A bucket of `capacity` tokens in this process that starts full: the budget of a `hedging()` given none. */
export function tokenBucket(capacity: number): HedgeBudgetStore {
  let tokens = capacity
  return {
    tryTake(cost) {
      if (cost > tokens) return false
      tokens -= cost
      return true
    },
    refill(amount) {
      tokens = Math.min(capacity, tokens + amount)
    },
    available: () => tokens,
  }
}
