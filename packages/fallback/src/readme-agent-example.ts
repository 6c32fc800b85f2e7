import { circuitBreakerModel, consecutive } from '@shallot/circuit-breaker'
import { type Agent, type AnyTool, type Clock, createAgent, type ModelAdapter, systemClock } from '@shallot/core'
import { fallbackModel } from './index.js'

/** gpt answers; while it is down, claude does. After 3 failed requests gpt's circuit opens and it is skipped for 30 s. */
export function resilientAgent(gpt: ModelAdapter, claude: ModelAdapter, tools: AnyTool[], clock: Clock = systemClock): Agent {
  return createAgent({
    model: gpt,
    tools,
    clock,
    modelMiddleware: [
      fallbackModel({ models: [claude] }), // outermost: sees what the breaker (and a retry inside it) finally says
      circuitBreakerModel({ policy: consecutive({ threshold: 3 }), cooldownMs: 30_000 }),
    ],
  })
}
