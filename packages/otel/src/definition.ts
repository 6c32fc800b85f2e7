import { defineMiddleware } from '@shallot/core'
import { z } from 'zod'
import { otel } from './otel.js'

/**
 * `otel()` as a config file writes it: the tracer and meter are the global providers' (the ones your
 * application registers), so the file names only the secrets to redact.
 *
 * @example
 * otelFileOptionsSchema.parse({ secrets: ['sk-live-…'] })
 */
export const otelFileOptionsSchema = z.strictObject({
  /** Your secrets, redacted from every attribute (built-in patterns are always redacted). */
  secrets: z.array(z.string().min(1).max(10_000)).max(1000).default([]),
})

/**
 * `otel` as a middleware definition, for config files and registries: one `create` whose layer gives
 * `execute_tool` spans in the tool stack (`build`) and `chat {model}` spans in the model stack (`buildModel`).
 *
 * @example
 * const agent = createAgent({ model, tools, modelMiddleware: [otelDefinition.buildModel({})] })
 */
export const otelDefinition = defineMiddleware({
  name: 'otel',
  description: 'OpenTelemetry GenAI spans: execute_tool per tool call, chat {model} per model call, with error.type on failure.',
  options: otelFileOptionsSchema,
  handles: { tools: true, models: true },
  create: (options) => otel(options),
})
