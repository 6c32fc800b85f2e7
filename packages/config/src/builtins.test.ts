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
    for (const definition of builtinMiddleware) expect(typeof definition.build({}, { stores })).toBe('function')
  })

  it('lets a file name the optional layers without installing anything', async () => {
    const config = await loadConfig({ stack: ['panic-catcher', { bulkhead: { maxConcurrent: 2 } }, { hedging: { delayMs: 50 } }] })
    expect(config.layers).toHaveLength(3)
  })
})
