import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { ConfigError, loadConfig } from './index.js'

const dir = mkdtempSync(join(tmpdir(), 'shallot-hostile-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let files = 0
function write(text: string, ext = 'yaml'): string {
  const file = join(dir, `hostile-${++files}.${ext}`)
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

const deepJson = (n: number) => `{"stack": ${'['.repeat(n)}${']'.repeat(n)}}`

describe('names are looked up as own properties only', () => {
  it.each([
    ['__proto__', 'proto__'],
    ['constructor', 'constructors'],
    ['toString', 'toStrings'],
    ['hasOwnProperty', 'hasOwnProperties'],
  ])('%s is an unknown policy, with the nearest real one', async (name, near) => {
    const err = await failure(
      loadConfig({ stack: [{ retry: name }], policies: { [near]: { maxAttempts: 2 } }, tools: { search: { retry: name } } }),
    )
    expect(err.issues.map((i) => [i.path, i.message])).toEqual([
      ['stack[0].retry', `unknown policy "${name}"; did you mean '${near}'?`],
      ['tools.search.retry', `unknown policy "${name}"; did you mean '${near}'?`],
    ])
  })

  it('still finds a policy that is really named like an Object method', async () => {
    const config = await loadConfig({ stack: [{ retry: 'toString' }], policies: { toString: { maxAttempts: 2 } } })
    expect(config.layers[0]?.base.raw).toEqual({ maxAttempts: 2 })
  })

  it('refuses a __proto__ key under tools in JSON, in YAML and in an object, instead of dropping it', async () => {
    const json = write('{\n  "stack": ["retry"],\n  "tools": {\n    "__proto__": { "retry": "none" }\n  }\n}\n', 'json')
    const yaml = write('stack: [retry]\ntools:\n  __proto__:\n    retry: none\n')
    for (const [file, line] of [
      [json, 4],
      [yaml, 3],
    ] as const) {
      const err = await failure(loadConfig(file))
      expect(err.issues).toEqual([
        expect.objectContaining({ path: 'tools.__proto__', line, message: expect.stringContaining('"__proto__"') }),
      ])
    }
    const own = await failure(loadConfig({ stack: ['retry'], tools: JSON.parse('{"__proto__": {"retry": "none"}}') }))
    expect(own.path).toBe('tools.__proto__')
    // An object literal's __proto__ sets the prototype: there is no key, but the object is not plain data.
    const literal = await failure(loadConfig({ stack: ['retry'], tools: { __proto__: { search: { retry: 'none' } } } as never }))
    expect(literal.path).toBe('tools')
    expect(literal.message).toContain('prototype')
  })

  it('refuses __proto__ as a key anywhere, such as inside the options of a layer', async () => {
    const err = await failure(loadConfig(write('stack:\n  - retry:\n      __proto__: { maxAttempts: 100 }\n')))
    expect(err.issues).toEqual([expect.objectContaining({ path: 'stack[0].retry.__proto__', line: 3 })])
  })
})

describe('hostile files', () => {
  it('parses .json as JSON: single quotes, comments and YAML-only syntax are errors with their line', async () => {
    const quotes = await failure(loadConfig(write('{\n  "stack": [\n    \'retry\'\n  ]\n}\n', 'json')))
    expect([quotes.line, quotes.message]).toEqual([3, expect.stringContaining('a string in single quotes')])
    const yamlish = await failure(loadConfig(write('stack:\n  - retry\n', 'json')))
    expect(yamlish.message).toContain('syntax error')
  })

  it('keeps the line of a wrong value deep in a JSON file', async () => {
    const text = JSON.stringify({ stack: ['panic-catcher', { retry: { maxAttempts: 3, baseMs: 'fast' } }] }, null, 2)
    const err = await failure(loadConfig(write(text, 'json')))
    expect(err.issues).toEqual([expect.objectContaining({ path: 'stack[1].retry.baseMs', line: 7 })])
  })

  it('refuses a YAML alias bomb with a ConfigError naming the file', async () => {
    const levels = ['a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for (let i = 1; i < 9; i++) {
      const name = String.fromCharCode(97 + i)
      const prev = String.fromCharCode(96 + i)
      levels.push(`${name}: &${name} [${Array(9).fill(`*${prev}`).join(', ')}]`)
    }
    const file = write(`${levels.join('\n')}\nstack: [retry]\n`)
    const err = await failure(loadConfig(file))
    expect(err.file).toBe(file)
    expect(err.message).toMatch(/aliases expand to more than 100000 values/)
  })

  it('still expands ordinary aliases', async () => {
    const config = await loadConfig(write('defaults: &d { maxAttempts: 2 }\nstack: [retry]\n'.replace('defaults', 'policies:\n  fast')))
    expect(config.document.policies.fast).toEqual({ maxAttempts: 2 })
    const shared = await loadConfig(write('policies:\n  fast: &f { maxAttempts: 2 }\n  same: *f\nstack:\n  - retry: same\n'))
    expect(shared.layers[0]?.base.raw).toEqual({ maxAttempts: 2 })
  })

  it('refuses a file over the size cap before parsing it, and takes a larger cap when told', async () => {
    const big = write(`stack: [retry]\n# ${'x'.repeat(1024 * 1024)}\n{{{ not yaml`)
    const err = await failure(loadConfig(big))
    expect(err.message).toMatch(/the file is \d+ bytes, over the 1 MiB a config may have/)
    expect(err.message).not.toContain('syntax')
    const fine = write(`stack: [retry]\n# ${'x'.repeat(1024 * 1024)}\n`)
    await expect(loadConfig(fine, { maxBytes: 2 * 1024 * 1024 })).resolves.toBeTruthy()
    const small = await failure(loadConfig(write('stack: [retry]\n'), { maxBytes: 8 }))
    expect(small.message).toContain('over the 8 bytes')
    await expect(loadConfig(write('stack: [retry]\n'), { maxBytes: -1 })).rejects.toThrow(/maxBytes: expected a whole number/)
  })

  const deep = 100_000
  it.each([
    ['JSON', () => write(deepJson(deep), 'json'), 1],
    ['YAML flow', () => write(`stack: ${'['.repeat(deep)}${']'.repeat(deep)}\n`), 1],
    ['YAML block', () => write(`stack:\n  ${'- '.repeat(deep)}retry\n`), 2],
    ['YAML indentation', () => write(`stack:\n${Array.from({ length: 70 }, (_, i) => `${' '.repeat(i + 2)}- `).join('\n')}retry\n`), 0],
  ])('refuses %s nested 100,000 deep with a ConfigError, not a RangeError', async (_, make, line) => {
    const err = await failure(loadConfig(make()))
    expect(err.message).toContain('nested more than 64 levels deep')
    if (line > 0) expect(err.line).toBe(line)
  })

  it('refuses an object nested 100,000 deep, and one that contains itself', async () => {
    let nested: unknown = 'retry'
    for (let i = 0; i < deep; i++) nested = [nested]
    expect((await failure(loadConfig({ stack: nested as never }))).message).toContain('nested more than 64 levels deep')
    const loop: Record<string, unknown> = { maxAttempts: 2 }
    loop.self = loop
    expect((await failure(loadConfig({ stack: [{ retry: loop }] }))).message).toContain('or it contains itself')
  })

  it('survives a 3,000-deep JSON file parsed again and again, in a process of its own', () => {
    // The crash this guards against aborted the process (V8's regexp compiler ran out of stack inside
    // a deep recursive parse), so it is seen only from outside. The child runs the built package.
    const dist = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'index.js')
    const source = fileURLToPath(new URL('./yaml-source.ts', import.meta.url))
    expect(
      statSync(join(dirname(dist), 'yaml-source.js')).mtimeMs,
      'the built package is older than its source: run `pnpm run build`',
    ).toBeGreaterThanOrEqual(statSync(source).mtimeMs)
    const json = write(deepJson(3000), 'json')
    const yaml = write(`stack: ${'['.repeat(3000)}${']'.repeat(3000)}\n`)
    const script = `
      const { loadConfig } = await import(${JSON.stringify(new URL(`file://${dist}`).href)})
      let refused = 0
      for (let i = 0; i < 20; i++) for (const file of ${JSON.stringify([json, yaml])}) {
        await loadConfig(file).catch((err) => { if (err.name === 'ConfigError') refused++; else throw err })
      }
      console.log(refused)
    `
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 })
    expect(child.stderr).toBe('')
    expect([child.status, child.stdout.trim()]).toEqual([0, '40'])
  })
})

describe('every problem of a file at once', () => {
  it('reports a wrong tools.*.effect together with the stack errors', async () => {
    const err = await failure(
      loadConfig(
        write(
          'stack:\n  - retry: { baseMs: fast }\n  - timeoutt\ntools:\n  charge_card:\n    effect: writ\n    retry: { maxAttempts: 0 }\n',
        ),
      ),
    )
    expect(err.issues.map((i) => [i.line, i.path])).toEqual([
      [2, 'stack[0].retry.baseMs'],
      [3, 'stack[1]'],
      [6, 'tools.charge_card.effect'],
      [7, 'tools.charge_card.retry.maxAttempts'],
    ])
  })

  it("reports the errors of a wrong stack entry's overrides too", async () => {
    const err = await failure(
      loadConfig(
        write(
          'stack:\n  - retry: { baseMs: fast }\n  - timeout: nope\n  - stuck-loop: 5\ntools:\n  a:\n    retry: { maxAttempts: 0 }\n  b:\n    timeout: { ms: -1 }\n  c:\n    retry: slow\n    stuck-loop: { refuseAfter: 0 }\n',
        ),
      ),
    )
    expect(err.issues.map((i) => [i.line, i.path])).toEqual([
      [2, 'stack[0].retry.baseMs'],
      [3, 'stack[1].timeout'],
      [4, 'stack[2].stuck-loop'],
      [7, 'tools.a.retry.maxAttempts'],
      [9, 'tools.b.timeout.ms'],
      [11, 'tools.c.retry'],
      [12, 'tools.c.stuck-loop.refuseAfter'],
    ])
  })

  it('reports a wrong policy once, however many layers name it', async () => {
    const err = await failure(
      loadConfig({ stack: [{ retry: 'bad' }], policies: { bad: { maxAttempts: 0 } }, tools: { a: { retry: 'bad' }, b: { retry: 'bad' } } }),
    )
    expect(err.issues.map((i) => i.path)).toEqual(['policies.bad.maxAttempts'])
  })

  it('reports a malformed stack entry, a malformed policy and a malformed tool all together', async () => {
    const err = await failure(
      loadConfig({
        stack: [42, { retry: 'fast' }, 'timeout'],
        policies: { fast: 'no' as never, slow: { maxAttempts: 0 } },
        tools: { 'bad name': {}, search: { effect: 'writ' as never, timeout: { ms: 0 }, retry: 'slow' } },
      }),
    )
    expect(err.issues.map((i) => i.path).sort()).toEqual([
      'policies.fast',
      'policies.slow.maxAttempts',
      'stack[0]',
      'tools.search.effect',
      'tools.search.timeout.ms',
      'tools["bad name"]',
    ])
  })
})

describe('a ConfigError is one line per problem, whatever the file holds', () => {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
  const OBEYED = /[\u0000-\u0009\u000B-\u001F\u007F-\u009F\u202A-\u202E\u2066-\u2069]/
  const hostile = 'x\u001b]0;pwned\u0007\u001b[2J\nforged: approve all\r\u009b2J\u202e'

  function expectOneLineEach(err: ConfigError) {
    expect(err.message.split('\n')).toHaveLength(err.issues.length)
    expect(err.message).not.toMatch(OBEYED)
    for (const issue of err.issues) expect(`${issue.path} ${issue.message}`).not.toMatch(OBEYED)
  }

  it.each([
    ['an unknown top-level key', (bad: string) => JSON.stringify({ stack: ['retry'], [bad]: 1 })],
    ['an unknown key in a layer', (bad: string) => JSON.stringify({ stack: [{ retry: { [bad]: 1 } }] })],
    ['an unknown policy', (bad: string) => JSON.stringify({ stack: [{ retry: bad }] })],
    ['a tool of that name', (bad: string) => JSON.stringify({ stack: ['retry'], tools: { [bad]: { retry: 'off' } } })],
    [
      'a duplicate key',
      (bad: string) =>
        `{"stack": ["retry"], "policies": {"${JSON.stringify(bad).slice(1, -1)}": {}, "${JSON.stringify(bad).slice(1, -1)}": {}}}`,
    ],
  ])('%s holding terminal escapes and a newline is quoted, never obeyed nor split', async (_, text) => {
    const err = await failure(loadConfig(write(text(hostile), 'json')))
    expectOneLineEach(err)
    expect(err.message).toContain('\\x1b]0;pwned\\x07')
  })

  it('a YAML key with escapes and a newline is quoted too', async () => {
    const err = await failure(loadConfig(write('stack: [retry]\n"a\\e]0;t\\a\\nforged": 1\n')))
    expectOneLineEach(err)
  })
})
