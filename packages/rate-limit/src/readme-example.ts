import { type AnyTool, type Clock, createStack, type Stack, systemClock } from '@shallot/core'
import { rateLimit } from './index.js'

/** 10 searches a second per tenant, 20 at once after a quiet spell; a call waits up to 1 s for its turn, else reads rate_limited. */
export function searchStack(search: AnyTool, tenantOf: (runId: string) => string, clock: Clock = systemClock): Stack {
  return createStack({
    tools: [search],
    clock,
    middleware: [rateLimit({ limit: 10, perMs: 1_000, burst: 20, maxWaitMs: 1_000, key: (ctx) => `search:${tenantOf(ctx.run.id)}` })],
  })
}
