import { createAgent } from '@shallot/agent'
import type { AnyTool, Clock, ModelAdapter } from '@shallot/core'
import { retry } from './index.js'

/** An agent whose model calls ride out two minutes of a provider's outage; its tool calls keep their 3 attempts. */
export function steadyAgent(model: ModelAdapter, tools: AnyTool[], clock?: Clock) {
  // Waits from 125-250 ms doubling to 8-16 s: at most 21 requests in the two minutes, however the draws fall.
  const retrying = retry({ backoff: 'equal-jitter', baseMs: 250, capMs: 16_000, outageBudgetMs: 120_000 })
  return createAgent({
    model,
    tools,
    ...(clock === undefined ? {} : { clock }),
    middleware: [retrying],
    modelMiddleware: [retrying],
  })
}
