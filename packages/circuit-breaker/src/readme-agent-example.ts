import { type Agent, type AnyTool, type Clock, createAgent, type ModelAdapter, systemClock } from '@shallot/core'
import { circuitBreakerModel, consecutive } from './index.js'

/** After 2 failed requests in a row the model is not asked for 10 s: each call fails fast with circuit_open. */
export function guardedAgent(model: ModelAdapter, tools: AnyTool[], clock: Clock = systemClock): Agent {
  return createAgent({
    model,
    tools,
    clock,
    modelMiddleware: [circuitBreakerModel({ policy: consecutive({ threshold: 2 }), cooldownMs: 10_000 })],
  })
}
