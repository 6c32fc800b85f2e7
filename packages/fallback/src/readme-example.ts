import { circuitBreaker, consecutive } from '@shallot/circuit-breaker'
import { type AnyTool, type Clock, createStack, type Stack, systemClock } from '@shallot/core'
import { retry } from '@shallot/retry'
import { fallback } from './index.js'

/** When the status page is down, the model reads its last good answer (and how old it is), else the mirror's. */
export function statusStack(statusPage: AnyTool, statusMirror: AnyTool, clock: Clock = systemClock): Stack {
  let stack: Stack
  const answerFromElsewhere = fallback({
    tools: { status_page: [{ from: 'cache' }, { from: 'tool', tool: 'status_mirror' }] },
    dispatch: (call, options) => stack.dispatch(call, options),
  })
  stack = createStack({
    tools: [statusPage, statusMirror],
    clock,
    middleware: [answerFromElsewhere, circuitBreaker({ policy: consecutive({ threshold: 2 }) }), retry()],
  })
  return stack
}
