import { middlewareConformance } from '@shallot/testing/conformance'
import { circuitBreakerDefinition } from './index.js'

middlewareConformance(circuitBreakerDefinition, {
  validOptions: { policy: { consecutive: { threshold: 3 } }, cooldownMs: 1000, halfOpenProbes: 2, halfOpenSuccesses: 2 },
  invalidOptions: [
    { cooldownMs: -5 },
    { lifetime: 'galaxy' },
    { scope: 'galaxy' },
    { lifetime: 'run', scope: 'stack' },
    { policy: 'consecutive' },
    { policy: { consecutive: { threshold: 0 } } },
    { policy: { consecutive: { threshold: 2 }, sampling: { failureRatio: 0.5 } } },
    { cooldownMs: 2000, maxCooldownMs: 1000 },
    { halfOpenProbes: 2, halfOpenSuccesses: 3 },
    { halfOpenSuccesses: 0 },
  ],
})
