import { createAgent } from '@shallot/agent'
import type { AnyTool, Clock, ModelAdapter } from '@shallot/core'
import { retryModel } from './index.js'

/** An agent whose model calls are repeated on a 429, a 5xx, a dropped connection or a timeout. */
export function patientAgent(model: ModelAdapter, tools: AnyTool[], clock?: Clock) {
  return createAgent({
    model,
    tools,
    ...(clock === undefined ? {} : { clock }),
    // 4 attempts, full jitter from 500 ms; a provider's Retry-After is waited for up to 30 s, never less.
    modelMiddleware: retryModel({ maxAttempts: 4, maxRetryAfterMs: 30_000 }),
  })
}
