import { type Agent, createAgent } from '@shallot/agent'
import { circuitBreaker, consecutive } from '@shallot/circuit-breaker'
import { type AnyTool, type Clock, type ModelAdapter, systemClock } from '@shallot/core'
import { fallback } from './index.js'

/**
 * gpt answers; while it is down, claude does, and after 3 failed requests gpt is skipped for 30 s.
 * A status page that is down answers from its last good result. One fallback, one breaker, both lists.
 */
export function resilientAgent(gpt: ModelAdapter, claude: ModelAdapter, tools: AnyTool[], clock: Clock = systemClock): Agent {
  const spare = fallback({ models: [claude], tools: { status_page: { from: 'cache' } } })
  const breaker = circuitBreaker({ policy: consecutive({ threshold: 3 }), cooldownMs: 30_000 })
  return createAgent({
    model: gpt,
    tools,
    clock,
    middleware: [spare, breaker], // outermost: sees what the breaker (and a retry inside it) finally says
    modelMiddleware: [spare, breaker],
  })
}
