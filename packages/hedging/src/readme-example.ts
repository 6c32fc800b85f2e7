import { type AnyTool, type Clock, createStack, type Stack, systemClock } from '@shallot/core'
import { memoryRetryBudget, retry } from '@shallot/retry'
import { timeout } from '@shallot/timeout'
import { hedging } from './index.js'

/** A search slower than its recent p95 gets a second attempt; hedges and retries spend one budget. */
export function searchStack(search: AnyTool, clock: Clock = systemClock): Stack {
  const retryBudget = memoryRetryBudget({ maxTokens: 100 })
  return createStack({
    tools: [search],
    clock,
    // hedging innermost: the first attempt goes through next(), the hedge calls the tool itself
    middleware: [retry({ retryBudget }), timeout({ ms: 5000 }), hedging({ retryBudget, initialDelayMs: 300 })],
  })
}
