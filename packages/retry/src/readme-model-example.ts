import { createAgent } from '@shallot/agent'
import type { AnyTool, Clock, ModelAdapter } from '@shallot/core'
import { retry } from './index.js'

/** An agent whose tool calls and model calls are repeated on a 429, a 5xx, a dropped connection or a timeout. */
export function patientAgent(model: ModelAdapter, tools: AnyTool[], clock?: Clock) {
  // 4 attempts, full jitter from 500 ms; a provider's Retry-After is waited for up to 30 s, never less.
  const retrying = retry({ maxAttempts: 4, maxRetryAfterMs: 30_000 })
  return createAgent({
    model,
    tools,
    ...(clock === undefined ? {} : { clock }),
    middleware: [retrying],
    modelMiddleware: [retrying],
  })
}
