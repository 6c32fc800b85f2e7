// biome-ignore-all lint/suspicious/noThenProperty: classifier rules are { match, then } data
import { defineMiddleware } from '@shallot/core'
import { middlewareConformance } from '@shallot/testing/conformance'
import { errorClassifier, errorClassifierOptionsSchema } from './index.js'

middlewareConformance(
  defineMiddleware({
    name: 'error-classifier',
    options: errorClassifierOptionsSchema,
    create: (options) => errorClassifier(options),
  }),
  {
    validOptions: { maxLength: 300, maxRetryAfterMs: 10_000 },
    invalidOptions: [
      { maxLength: 5 },
      { secrets: 'hunter2' },
      { rules: [{ match: { status: 99 }, then: { code: 'x', category: 'user' } }] },
    ],
  },
)
