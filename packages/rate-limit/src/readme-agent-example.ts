import { type Agent, createAgent } from '@shallot/agent'
import { type AnyTool, type Clock, type ModelAdapter, systemClock } from '@shallot/core'
import { rateLimit } from './index.js'

/** One request a second to the model, and one call a second to each tool: one layer, both lists, a bucket each. */
export function pacedAgent(model: ModelAdapter, tools: AnyTool[], clock: Clock = systemClock): Agent {
  const paced = rateLimit({ limit: 1, perMs: 1_000, burst: 1, maxWaitMs: 5_000 })
  return createAgent({ model, tools, clock, middleware: [paced], modelMiddleware: [paced] })
}
