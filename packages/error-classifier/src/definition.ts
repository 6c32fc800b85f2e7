import { defineMiddleware } from '@shallot/core'
import { z } from 'zod'
import { errorClassifier, errorClassifierOptionsSchema } from './error-classifier.js'

const { rules, builtins, maxLength, maxRetryAfterMs, secrets, sanitizeToolErrors } = errorClassifierOptionsSchema.shape

/**
 * The error classifier as a config file writes it: every option but the `now` function.
 *
 * @example
 * errorClassifierFileOptionsSchema.parse({ rules: [{ match: { status: 404 }, then: { code: 'no_such_order', category: 'recoverable' } }] })
 */
export const errorClassifierFileOptionsSchema = z.strictObject({ rules, builtins, maxLength, maxRetryAfterMs, secrets, sanitizeToolErrors })

/**
 * `errorClassifier` as a middleware definition, for config files and registries: tool calls (`build`) and
 * model calls (`buildModel`) from the same options.
 *
 * @example
 * const layer = errorClassifierDefinition.build({ maxLength: 300, secrets: [apiKey] })
 * const modelLayer = errorClassifierDefinition.buildModel({ secrets: [apiKey] })
 */
export const errorClassifierDefinition = defineMiddleware({
  name: 'error-classifier',
  description:
    'Turns foreign throws (HTTP statuses, errno codes, SDK errors) into redacted soft ToolErrors; rules are data. For model calls: the typed failure retry, breaker and fallback read.',
  options: errorClassifierFileOptionsSchema,
  handles: { tools: true, models: true },
  create: (options) => errorClassifier(options),
})
