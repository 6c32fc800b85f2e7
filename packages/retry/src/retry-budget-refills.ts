/**
 * A shared retry budget's refills as one worker holds them: every successful call refills the bucket,
 * and writing each refill would make the fleet's healthy calls pay a round trip to the budget's one
 * key. They are added up here and written in one batch, with this worker's next take or on its first
 * refill once the oldest held one is `flushMs` old. The fleet's bucket is then short of them meanwhile:
 * stricter, never looser (the AWS SDK keeps its retry quota in each client outright).
 */
export interface RetryBudgetRefills {
  /** Holds `tokens`; answers the tokens to write now (every one held, once the oldest is `flushMs` old), else 0. */
  add(tokens: number): number
  /** Takes every held token out, for a take to carry them to the bucket. */
  takeAll(): number
  /** Tokens held now. */
  readonly held: number
}

/**
 * Refills held for a shared `RetryBudgetStore` (Redis, PostgreSQL) between its writes.
 *
 * @example
 * const refills = retryBudgetRefills(clock, 1000)
 * const refill = (tokens: number) => {
 *   const due = refills.add(tokens)
 *   return due === 0 ? Promise.resolve() : writeRefill(due)
 * }
 */
export function retryBudgetRefills(clock: { now(): number }, flushMs: number): RetryBudgetRefills {
  let held = 0
  let since = 0
  return {
    add(tokens) {
      if (!(tokens > 0)) return 0
      const now = clock.now()
      // A clock stepped back would hold the tokens for as long as it stepped: count from now instead.
      if (held === 0 || now < since) since = now
      held += tokens
      if (now - since < flushMs) return 0
      const due = held
      held = 0
      return due
    },
    takeAll() {
      const all = held
      held = 0
      return all
    },
    get held() {
      return held
    },
  }
}
