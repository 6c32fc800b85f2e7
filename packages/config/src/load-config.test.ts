import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import { afterAll, describe, expect, it } from 'vitest'
import { stringify } from 'yaml'
import { z } from 'zod'
import { ConfigError, configJsonSchema, configSchema, isShallotConfig, loadConfig } from './index.js'

const dir = mkdtempSync(join(tmpdir(), 'shallot-config-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let files = 0
function write(text: string, ext = 'yaml'): string {
  const file = join(dir, `config-${++files}.${ext}`)
  writeFileSync(file, text)
  return file
}

async function failure(load: Promise<unknown>): Promise<ConfigError> {
  const err = await load.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(ConfigError.is(err), `expected a ConfigError, got ${String(err)}`).toBe(true)
  return err as ConfigError
}

const ORDER = ['panic-catcher', 'stuck-loop', 'idempotency', 'circuit-breaker', 'retry', 'error-classifier', 'timeout'] as const

const retryPolicy = fc.record(
  {
    backoff: fc.constantFrom('full-jitter', 'equal-jitter', 'exponential', 'constant', 'none'),
    baseMs: fc.integer({ min: 0, max: 1000 }),
    capMs: fc.integer({ min: 1000, max: 10_000 }),
    maxAttempts: fc.integer({ min: 1, max: 6 }),
    perCode: fc.constant({ rate_limited: { maxAttempts: 5 } }),
  },
  { requiredKeys: [] },
)
const timeoutOptions = fc.record({ ms: fc.integer({ min: 1, max: 600_000 }) }, { requiredKeys: [] })

const entry = (name: (typeof ORDER)[number]) => {
  if (name === 'retry')
    return fc
      .constantFrom<unknown>('retry', { retry: 'fast' }, { retry: null })
      .chain((e) => (e === 'retry' ? retryPolicy.map((p) => ({ retry: p })) : fc.constant(e)))
  if (name === 'timeout')
    return fc.oneof(
      fc.constant<unknown>('timeout'),
      timeoutOptions.map((o) => ({ timeout: o })),
    )
  if (name === 'circuit-breaker')
    return fc.constantFrom<unknown>(name, { [name]: { policy: { consecutive: { threshold: 3 } }, cooldownMs: 5000 } })
  return fc.constantFrom<unknown>(name, { [name]: {} })
}

/** Valid documents: built-ins in the recommended order, policies, and tool overrides for layers in the stack. */
const documents = fc.subarray([...ORDER]).chain((names) =>
  fc.record({
    stack: fc.tuple(...names.map(entry)),
    policies: fc.record({ fast: retryPolicy, slow: retryPolicy }),
    tools: fc.dictionary(
      fc.stringMatching(/^[a-z][a-z_]{0,11}$/),
      fc.record(
        {
          effect: fc.constantFrom('read', 'idempotent', 'write'),
          ...(names.includes('retry') ? { retry: fc.oneof(fc.constantFrom<unknown>('none', 'slow'), retryPolicy) } : {}),
          ...(names.includes('timeout') ? { timeout: timeoutOptions } : {}),
        },
        { requiredKeys: [] },
      ),
      { maxKeys: 3 },
    ),
  }),
)

describe('loadConfig round trip', () => {
  // The JSON Schema editors use, read back into zod.
  const editor = z.fromJSONSchema(configJsonSchema() as Parameters<typeof z.fromJSONSchema>[0])

  it('reads back every valid document, as YAML, as JSON and as an object, unchanged; the JSON Schema accepts it too', async () => {
    await fc.assert(
      fc.asyncProperty(documents, async (document) => {
        const expected = configSchema.parse(document)
        expect(editor.safeParse(document).success).toBe(true)
        const fromYaml = await loadConfig(write(stringify(document), 'yaml'))
        const fromJson = await loadConfig(write(JSON.stringify(document, null, 2), 'json'))
        const fromObject = await loadConfig(document as never)
        for (const config of [fromYaml, fromJson, fromObject]) {
          expect(config.document).toEqual(expected)
          expect(config.layers.map((l) => l.name)).toEqual(
            document.stack.map((e) => (typeof e === 'string' ? e : Object.keys(e as object)[0])),
          )
        }
        // What was read writes back to the same document.
        const again = await loadConfig(write(stringify(fromYaml.document), 'yml'))
        expect(again.document).toEqual(expected)
      }),
      { numRuns: 40 },
    )
  })

  it('looks up named policies and merges tool overrides over the stack entry', async () => {
    const config = await loadConfig(
      write(`
stack:
  - retry: fast
  - timeout: { ms: 5000 }
policies:
  fast: { backoff: constant, baseMs: 100, maxAttempts: 4 }
  patient: { backoff: exponential, baseMs: 1000, maxAttempts: 6 }
tools:
  charge_card: { effect: write, retry: none, timeout: { ms: 20000 } }
  search: { retry: patient }
  lookup: { retry: { maxAttempts: 2 } }
`),
    )
    const [retry, timeout] = config.layers
    expect(retry?.base.raw).toEqual({ backoff: 'constant', baseMs: 100, maxAttempts: 4 })
    expect(retry?.tools.get('charge_card')).toBe('none')
    expect(retry?.tools.get('search')).toMatchObject({ raw: { backoff: 'exponential', baseMs: 1000, maxAttempts: 6 } })
    expect(retry?.tools.get('lookup')).toMatchObject({ raw: { backoff: 'constant', baseMs: 100, maxAttempts: 2 } })
    expect(timeout?.tools.get('charge_card')).toMatchObject({ raw: { ms: 20_000 } })
    expect(config.effects.get('charge_card')).toBe('write')
    expect(isShallotConfig(config)).toBe(true)
    expect(isShallotConfig({ ...config })).toBe(false)
  })
})

interface Malformed {
  what: string
  text: string
  ext?: string
  line: number
  path: string
  says: string[]
}

// Each file is wrong in one place; the error must point at that line and path, and say how to fix it.
const malformed: Malformed[] = [
  {
    what: 'a string where a number goes',
    text: 'stack:\n  - panic-catcher\n  - stuck-loop\n  - circuit-breaker\n  - retry:\n      baseMs: fast\n',
    line: 6,
    path: 'stack[3].retry.baseMs',
    says: ['expected a number from 0 to 2147483647, got "fast"'],
  },
  {
    what: 'a misspelt middleware',
    text: 'stack:\n  - panic-catcher\n  - retyr\n',
    line: 3,
    path: 'stack[1]',
    says: ['unknown middleware "retyr"', "did you mean 'retry'?"],
  },
  {
    what: 'a misspelt policy',
    text: 'policies:\n  fast: { baseMs: 100 }\nstack:\n  - retry: fsat\n',
    line: 4,
    path: 'stack[0].retry',
    says: ['unknown policy "fsat"', "did you mean 'fast'?"],
  },
  {
    what: 'a misspelt section',
    text: 'stack: [retry]\npolices:\n  fast: {}\n',
    line: 2,
    path: 'polices',
    says: ['unknown key "polices"', "did you mean 'policies'?"],
  },
  {
    what: 'a misspelt effect',
    text: 'stack: [retry]\ntools:\n  charge_card:\n    effect: writ\n',
    line: 4,
    path: 'tools.charge_card.effect',
    says: ["expected one of 'read', 'idempotent', 'write', got \"writ\"", "did you mean 'write'?"],
  },
  {
    what: 'an override for a layer the stack lacks',
    text: 'stack: [retry]\ntools:\n  charge_card:\n    timeout: { ms: 20000 }\n',
    line: 4,
    path: 'tools.charge_card.timeout',
    says: ['the stack has no timeout layer; add it to stack'],
  },
  {
    what: 'a bad value inside a policy',
    text: 'stack:\n  - retry: fast\npolicies:\n  fast:\n    backoff: fulljitter\n',
    line: 5,
    path: 'policies.fast.backoff',
    says: ['got "fulljitter"', "did you mean 'full-jitter'?"],
  },
  {
    what: 'a rule across two options of a middleware',
    text: 'stack:\n  - retry:\n      baseMs: 9000\n      capMs: 1000\n',
    line: 3,
    path: 'stack[0].retry.baseMs',
    says: ['must not exceed capMs (1000)', 'got 9000'],
  },
  {
    what: 'a bad value in a tool override merged over the stack entry',
    text: 'stack:\n  - timeout: { ms: 5000 }\ntools:\n  search:\n    timeout:\n      ms: 0\n',
    line: 6,
    path: 'tools.search.timeout.ms',
    says: ['expected a whole number > 0 and ≤ 2147483647, got 0'],
  },
  {
    what: 'two middlewares in one entry',
    text: 'stack:\n  - panic-catcher\n  - { retry: {}, timeout: {} }\n',
    line: 3,
    path: 'stack[1]',
    says: ['names 2 middlewares (retry, timeout); give each its own entry'],
  },
  { what: 'YAML that does not parse', text: 'stack:\n  - retry\n  timeout: {}\n', line: 3, path: '', says: ['syntax error'] },
  {
    what: 'JSON with a trailing comma',
    ext: 'json',
    text: '{\n  "stack": [\n    "retry",\n  ]\n}\n',
    line: 4,
    path: '',
    says: ['syntax error: a trailing comma before "]"'],
  },
  {
    what: 'a key written twice',
    text: 'stack: [retry]\ntools: {}\ntools: {}\n',
    line: 3,
    path: 'tools',
    says: ['"tools" is written twice in the same object (first on line 2)'],
  },
  {
    what: 'a key written twice in JSON',
    ext: 'json',
    text: '{\n  "stack": ["retry"],\n  "stack": ["timeout"]\n}\n',
    line: 3,
    path: 'stack',
    says: ['"stack" is written twice in the same object (first on line 2)'],
  },
  {
    what: 'an empty file',
    text: '',
    line: 1,
    path: '',
    says: ['expected an object with $schema, stack, modelMiddleware, policies, tools, model, mcpServers, got null'],
  },
]

describe('loadConfig on malformed files', () => {
  it.each(malformed)('names the line, the path and the fix for $what', async ({ text, ext, line, path, says }) => {
    const file = write(text, ext)
    const err = await failure(loadConfig(file))
    expect(err.file).toBe(file)
    expect(err.line).toBe(line)
    expect(err.path).toBe(path)
    const first = err.message.split('\n')[0] as string
    expect(first.startsWith(`${file}:${line}: ${path === '' ? '' : `${path}: `}`)).toBe(true)
    for (const phrase of says) expect(first).toContain(phrase)
    expect(err.message).not.toMatch(/\n\s+at /)
    expect(err.message).not.toContain('.ts:')
  })

  it('fills received and allowed for a wrong value', async () => {
    const err = await failure(loadConfig(write('stack:\n  - timeout: { ms: -5 }\n')))
    expect(err).toMatchObject({ received: '-5', allowed: 'a whole number > 0 and ≤ 2147483647', path: 'stack[0].timeout.ms', line: 2 })
  })

  it('lists every problem of the file, in line order', async () => {
    const err = await failure(loadConfig(write('stack:\n  - retyr\n  - timeout: { ms: 0 }\n  - retry: fsat\npolicies:\n  fast: {}\n')))
    expect(err.issues.map((i) => [i.line, i.path])).toEqual([
      [2, 'stack[0]'],
      [3, 'stack[1].timeout.ms'],
      [4, 'stack[2].retry'],
    ])
    expect(err.message.split('\n')).toHaveLength(3)
  })

  it('reports a file that does not exist', async () => {
    const err = await failure(loadConfig(join(dir, 'missing.yaml')))
    expect(err.message).toContain('missing.yaml: cannot read the config file: no such file')
  })

  it('names no file and no line for a config given as an object', async () => {
    const err = await failure(loadConfig({ stack: [{ retry: { maxAttempts: 0 } }] }))
    expect(err).toMatchObject({ file: undefined, line: undefined, path: 'stack[0].retry.maxAttempts' })
    expect(err.message).toMatch(/^config: stack\[0\]\.retry\.maxAttempts: expected a whole number ≥ 1 or Infinity, got 0/)
  })

  it('refuses "none" in the stack, where it would turn a layer off for every tool', async () => {
    const err = await failure(loadConfig(write('stack:\n  - retry: none\n')))
    expect(err.path).toBe('stack[0].retry')
    expect(err.message).toContain('remove it from stack')
  })

  it('refuses a middleware listed twice', async () => {
    const err = await failure(loadConfig(write('stack:\n  - retry\n  - timeout\n  - retry: { maxAttempts: 2 }\n')))
    expect(err).toMatchObject({ path: 'stack[2]', line: 4 })
    expect(err.message).toContain('already in the stack at stack[0]')
  })
})
