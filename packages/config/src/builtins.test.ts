import { isMiddlewareDefinition } from '@shallot/core/kit'
import { describe, expect, it } from 'vitest'
import { builtinMiddleware, createStores, loadConfig } from './index.js'

describe('builtinMiddleware', () => {
  it('lists every built-in layer once, in the recommended order', () => {
    expect(builtinMiddleware.map((d) => d.name)).toEqual([
      'panic-catcher',
      'redact',
      'stuck-loop',
      'fallback',
      'idempotency',
      'bulkhead',
      'rate-limit',
      'circuit-breaker',
      'retry',
      'coalesce',
      'error-classifier',
      'timeout',
      'hedging',
    ])
    expect(builtinMiddleware.every(isMiddlewareDefinition)).toBe(true)
    expect(Object.isFrozen(builtinMiddleware)).toBe(true)
  })

  it('builds every one of them from file options alone, with the stack’s stores', () => {
    const stores = createStores()
    // A rate limit has no default limit: the file names it.
    const options = (name: string) => (name === 'rate-limit' ? { limit: 10 } : {})
    for (const definition of builtinMiddleware) expect(typeof definition.build(options(definition.name), { stores })).toBe('function')
  })

  it('lets a file name the optional layers without installing anything', async () => {
    const config = await loadConfig({ stack: ['panic-catcher', { bulkhead: { maxConcurrent: 2 } }, { hedging: { delayMs: 50 } }] })
    expect(config.layers).toHaveLength(3)
  })
})
