import { createAgent } from '@shallot/agent'
import type { AnyTool, Clock, ModelAdapter } from '@shallot/core'
import { timeoutModel } from './index.js'

/** An agent whose every model attempt gets 20 s, and the model named 'fast' 5 s. */
export function boundedAgent(model: ModelAdapter, tools: AnyTool[], clock?: Clock) {
  return createAgent({
    model,
    tools,
    ...(clock === undefined ? {} : { clock }),
    modelMiddleware: timeoutModel({ ms: 20_000, models: { fast: 5_000 } }),
  })
}
