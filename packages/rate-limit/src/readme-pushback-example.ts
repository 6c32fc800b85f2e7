import { type Agent, createAgent } from '@shallot/agent'
import { type AnyTool, type Clock, type ModelAdapter, systemClock } from '@shallot/core'
import { retry } from '@shallot/retry'
import { type PushbackStore, rateLimit } from './index.js'

/** One worker of a fleet: a Retry-After any worker hears holds the model for all of them (`pushback`: e.g. `redisStores({ client }).pushback`). */
export function fleetWorker(model: ModelAdapter, tools: AnyTool[], pushback: PushbackStore, clock: Clock = systemClock): Agent {
  // Inside retry: every request the provider answers passes the layer, so its first Retry-After is shared at once.
  const modelMiddleware = [retry({ maxAttempts: 3 }), rateLimit({ limit: 500, perMs: 60_000, maxWaitMs: 45_000, pushback })]
  return createAgent({ model, tools, clock, modelMiddleware })
}
