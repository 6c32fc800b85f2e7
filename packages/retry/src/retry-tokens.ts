import type { Logger } from '@shallot/core'
import type { RetryBudgetStore } from './retry-budget-store.js'

/**
 * Whether the bucket lets one more repeat run. Only `true` is yes: a store answering anything else, throwing or
 * rejecting has not said the tokens were taken, and a budget that cannot be read fails closed (no retry beats
 * an unbounded storm), logged with `refusal`.
 */
export async function takeTokens(store: RetryBudgetStore, tokens: number, log: Logger, refusal: string): Promise<boolean> {
  try {
    return (await store.tryTake(tokens)) === true
  } catch (err) {
    log.warn({ err }, refusal)
    return false
  }
}

/** Puts tokens back. A lost refill only makes the bucket stricter for a while: logged, never thrown at the call that succeeded. */
export async function refillTokens(store: RetryBudgetStore, tokens: number, log: Logger): Promise<void> {
  try {
    await store.refill(tokens)
  } catch (err) {
    log.warn({ err }, 'retry budget store failed to refill')
  }
}
