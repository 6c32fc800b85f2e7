import { type AnyTool, createAgent, type ModelAdapter } from '@shallot/core'
import { defaultMiddleware } from 'shallot'
import { otel } from './index.js'

/** An agent traced from core's events: otel() may sit anywhere, token totals come from the run's events. */
export function tracedAgent(model: ModelAdapter, tools: AnyTool[]) {
  const tracing = otel({ secrets: [process.env.API_KEY ?? ''] })
  const agent = createAgent({ model, tools, middleware: [...defaultMiddleware(), tracing], onEvent: tracing.onAgentEvent })
  tracing.attach(agent.stack)
  return agent
}
