import type { MiddlewareDefinition } from '@shallot/core'
import { type ConformanceOptions, middlewareConformance } from '@shallot/testing/conformance'
import { builtinMiddleware, createStores } from './index.js'

const suites: Record<string, ConformanceOptions> = {
  'panic-catcher': { validOptions: { maxMessageLength: 300 }, invalidOptions: [{ maxMessageLength: 10 }, { hint: 5 }] },
  'stuck-loop': { validOptions: { refuseAfter: 2 }, invalidOptions: [{ refuseAfter: 0 }, { stopAfter: 'soon' }] },
  idempotency: {
    validOptions: { ttlMs: 60_000 },
    invalidOptions: [{ ttlMs: -1 }, { effects: ['delete'] }],
    env: { stores: createStores() },
  },
  'circuit-breaker': {
    validOptions: { policy: { consecutive: { threshold: 3 } }, cooldownMs: 1000 },
    invalidOptions: [{ cooldownMs: 0 }, { policy: { consecutive: { threshold: 0 } } }],
  },
  retry: {
    validOptions: { backoff: 'constant', baseMs: 10, maxAttempts: 3 },
    invalidOptions: [{ backoff: 'fulljitter' }, { baseMs: 'fast' }],
    env: { stores: createStores() },
  },
  'error-classifier': { validOptions: {}, invalidOptions: [{ maxLength: 5 }, { secrets: 'hunter2' }] },
  timeout: { validOptions: { ms: 1000 }, invalidOptions: [{ ms: 0 }, { ms: 'soon' }] },
}

const byName = new Map<string, MiddlewareDefinition>(builtinMiddleware.map((d) => [d.name, d]))
for (const [name, options] of Object.entries(suites)) {
  const definition = byName.get(name)
  if (definition === undefined) throw new Error(`no built-in definition named ${name}`)
  middlewareConformance(definition, options)
}
