import { type AnyTool, createAgent, type Logger, type ModelAdapter } from '@shallot/core'
import { defaultMiddleware } from 'shallot'
import { instrumentAgent, instrumentModel, operatorLog, otel } from './index.js'

/** An agent whose runs are traced, measured and logged. Register your OpenTelemetry SDK first. */
export function observedAgent(model: ModelAdapter, tools: AnyTool[], logger: Logger) {
  const log = operatorLog(logger, { secrets: [process.env.API_KEY ?? ''] })
  const agent = createAgent({
    model: log.model(instrumentModel(model, { model: 'gpt-4.1-mini', provider: 'openai' })),
    tools,
    middleware: [otel(), log.middleware, ...defaultMiddleware()],
  })
  return log.agent(instrumentAgent(agent, { name: 'support' }))
}
