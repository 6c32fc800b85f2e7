import { createAgent } from '@shallot/agent'
import type { AnyTool, Logger, ModelAdapter } from '@shallot/core'
import { defaultMiddleware } from 'shallot'
import { otel } from './index.js'

/** An agent whose runs are traced, measured and logged. Register your OpenTelemetry SDK first. */
export function observedAgent(model: ModelAdapter, tools: AnyTool[], logger: Logger) {
  const tracing = otel({ secrets: [process.env.API_KEY ?? ''] })
  const agent = createAgent({
    model,
    tools,
    logger,
    // One layer in both lists: execute_tool spans around tool calls, chat spans around model calls.
    middleware: [...defaultMiddleware(), tracing],
    modelMiddleware: [tracing],
    onEvent: tracing.onAgentEvent,
  })
  tracing.attach(agent.stack)
  return agent
}
