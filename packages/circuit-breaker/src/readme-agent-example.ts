import { type Agent, createAgent } from '@shallot/agent'
import { type AnyTool, type Clock, type ModelAdapter, systemClock } from '@shallot/core'
import { circuitBreaker, consecutive } from './index.js'

/** After 2 failed requests in a row, a tool (or the model) is not asked for 10 s: one layer, both lists, a circuit each. */
export function guardedAgent(model: ModelAdapter, tools: AnyTool[], clock: Clock = systemClock): Agent {
  const breaker = circuitBreaker({ policy: consecutive({ threshold: 2 }), cooldownMs: 10_000 })
  return createAgent({ model, tools, clock, middleware: [breaker], modelMiddleware: [breaker] })
}
