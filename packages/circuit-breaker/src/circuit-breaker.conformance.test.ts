import { defineMiddleware } from '@shallot/core'
import { middlewareConformance } from '@shallot/testing/conformance'
import { circuitBreaker, circuitBreakerOptionsSchema } from './index.js'

middlewareConformance(
  defineMiddleware({
    name: 'circuit-breaker',
    options: circuitBreakerOptionsSchema,
    create: (options) => circuitBreaker(options),
  }),
  {
    validOptions: { cooldownMs: 1000, halfOpenProbes: 2 },
    invalidOptions: [{ cooldownMs: -5 }, { scope: 'galaxy' }, { policy: 'consecutive' }, { cooldownMs: 2000, maxCooldownMs: 1000 }],
  },
)
