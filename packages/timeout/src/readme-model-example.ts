import { createAgent } from '@shallot/agent'
import type { AnyTool, Clock, ModelAdapter } from '@shallot/core'
import { timeout } from './index.js'

/** Every attempt gets 20 s; a call of the tool 'search' 2 s, an attempt of the model named 'fast' 5 s. */
export function boundedAgent(model: ModelAdapter, tools: AnyTool[], clock?: Clock) {
  const deadline = timeout({ ms: 20_000, tools: { search: 2_000 }, models: { fast: 5_000 } })
  return createAgent({
    model,
    tools,
    ...(clock === undefined ? {} : { clock }),
    middleware: [deadline],
    modelMiddleware: [deadline],
  })
}
