import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { configJsonSchema, configJsonSchemaText } from './index.js'

const committed = new URL('../shallot.schema.json', import.meta.url)

describe('shallot.schema.json', () => {
  it('is what the zod schema generates now (run `pnpm run schema` after changing an options schema)', () => {
    expect(readFileSync(committed, 'utf8')).toBe(configJsonSchemaText())
  })

  it('offers every built-in middleware and its options to editors', () => {
    const text = configJsonSchemaText()
    for (const name of ['panic-catcher', 'stuck-loop', 'idempotency', 'circuit-breaker', 'retry', 'error-classifier', 'timeout']) {
      expect(text).toContain(`"${name}"`)
    }
    expect(configJsonSchema()).toMatchObject({
      $schema: 'http://json-schema.org/draft-07/schema#',
      required: ['stack'],
      additionalProperties: false,
    })
  })

  // The JSON Schema read back into zod is the schema an editor applies.
  const editor = z.fromJSONSchema(configJsonSchema() as Parameters<typeof z.fromJSONSchema>[0])

  it.each([
    [
      'a full config',
      {
        $schema: './shallot.schema.json',
        stack: ['panic-catcher', { retry: 'fast' }, { timeout: { ms: 5000 } }],
        policies: { fast: { baseMs: 100 } },
        tools: { charge_card: { effect: 'write', retry: 'none', timeout: { ms: 20_000 } } },
      },
    ],
    ['a third-party package with options', { stack: [{ '@acme/shallot-rate-limit': { rps: 5 } }, 'timeout'] }],
    ['empty options', { stack: [{ 'panic-catcher': null }] }],
  ])('accepts %s', (_what, document) => {
    expect(editor.safeParse(document).success).toBe(true)
  })

  it.each([
    ['a string where a number goes', { stack: [{ retry: { baseMs: 'fast' } }] }],
    ['an unknown option of a built-in', { stack: [{ timeout: { seconds: 5 } }] }],
    ['an unknown section', { stack: ['retry'], polices: {} }],
    ['two middlewares in one entry', { stack: [{ retry: {}, timeout: {} }] }],
    ['a misspelt effect', { stack: ['retry'], tools: { x: { effect: 'writ' } } }],
    ['a number as an entry', { stack: [42] }],
    ['a missing stack', { policies: {} }],
  ])('refuses %s', (_what, document) => {
    expect(editor.safeParse(document).success).toBe(false)
  })
})
