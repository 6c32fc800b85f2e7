import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { checkConfig, loadConfig } from './index.js'

const dir = mkdtempSync(join(tmpdir(), 'shallot-unused-policies-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let files = 0
function write(text: string, ext = 'yaml'): string {
  const file = join(dir, `config-${++files}.${ext}`)
  writeFileSync(file, text)
  return file
}

const STACK = 'stack:\n  - panic-catcher\n  - retry\n'

describe('a policy no layer names', () => {
  it('is reported with its lines when it is wrong, read as the options of the layer it looks like', async () => {
    const file = write(`${STACK}policies:\n  slow:\n    backof: full\n    maxAttempts: -1\n`)
    const check = await checkConfig(file)
    expect(check.issues.map((i) => [i.line, i.path, i.message])).toEqual([
      [6, 'policies.slow.backof', `unknown key "backof"; did you mean 'backoff'?`],
      [7, 'policies.slow.maxAttempts', expect.stringContaining('-1')],
    ])
    expect(check.issues[0]?.hint).toContain('no layer names this policy yet; read as retry options')
    await expect(loadConfig(file)).rejects.toThrow(/:6: policies\.slow\.backof: unknown key "backof"/)
  })

  it('is reported once when a layer names it, as that layer reads it', async () => {
    const check = await checkConfig(write(`stack:\n  - retry: slow\npolicies:\n  slow:\n    maxAttempts: -1\n`))
    expect(check.issues.map((i) => [i.line, i.path, i.hint])).toEqual([[5, 'policies.slow.maxAttempts', undefined]])
  })

  it('passes when some layer accepts it, in the stack or not', async () => {
    const text = `${STACK}policies:\n  fine:\n    maxAttempts: 3\n  later:\n    failureThreshold: 2\n  empty: {}\n`
    expect((await checkConfig(write(text))).issues).toEqual([])
  })

  it('is left alone when it shares no key with a known layer: it may be meant for a package not loaded here', async () => {
    expect((await checkConfig(write(`${STACK}policies:\n  theirs:\n    someOption: 1\n`))).issues).toEqual([])
  })

  it('is not mistaken for unused when the layer naming it is an unknown package', async () => {
    const check = await checkConfig(write(`stack:\n  - not-a-layer-xyz: slow\npolicies:\n  slow:\n    maxAttempts: -1\n`))
    expect(check.issues.map((i) => i.path)).toEqual(['stack[0]'])
  })

  it("is read when its only key is a typo of some layer's option", async () => {
    const check = await checkConfig(write(`${STACK}policies:\n  slow:\n    maxAtempts: 3\n`))
    expect(check.issues.map((i) => [i.line, i.path, i.message])).toEqual([
      [6, 'policies.slow.maxAtempts', `unknown key "maxAtempts"; did you mean 'maxAttempts'?`],
    ])
  })

  it('reads a policy named constructor or toString as its own, beside a __proto__ key refused by its name', async () => {
    const text = '{"stack":["retry"],"policies":{"__proto__":{"maxAttempts":-1},"constructor":{"maxAttempts":-1},"toString":{"backof":1}}}'
    const check = await checkConfig(write(text, 'json'))
    expect(check.issues.map((i) => [i.line, i.path])).toEqual([
      [1, 'policies.__proto__'],
      [1, 'policies.constructor.maxAttempts'],
      [1, 'policies.toString.backof'],
    ])
  })

  it('reports every unused policy of a big file once, with its own line', async () => {
    const lines = Array.from({ length: 100 }, (_, i) => `  p${i}:\n    maxAttempts: ${i % 2 === 0 ? 3 : -1}`)
    const check = await checkConfig(write(`${STACK}policies:\n${lines.join('\n')}\n`))
    expect(check.issues).toHaveLength(50)
    expect(check.issues[0]).toMatchObject({ line: 8, path: 'policies.p1.maxAttempts' })
    expect(check.issues.at(-1)).toMatchObject({ line: 5 + 2 * 99 + 1, path: 'policies.p99.maxAttempts' })
  })

  it('refuses an object config with a __proto__ key whole, before reading any policy (as for any other key)', async () => {
    const policies = JSON.parse('{"__proto__":{"maxAttempts":-1},"slow":{"maxAttempts":-1}}')
    const check = await checkConfig({ stack: ['retry'], policies })
    expect(check.issues.map((i) => i.path)).toEqual(['policies.__proto__'])
  })
})

describe('a policy named only where no layer reads it', () => {
  it('is read as the layer a misspelt stack entry most likely means, so its own mistakes are reported too', async () => {
    const text = 'stack:\n  - panic-catcher\n  - retyr: fast\npolicies:\n  fast: { backoff: full-jitter, baseMs: 100, maxAtempts: 5 }\n'
    const check = await checkConfig(write(text))
    expect(check.issues.map((i) => [i.line, i.path, i.message])).toEqual([
      [3, 'stack[1]', `unknown middleware "retyr"; did you mean 'retry'?`],
      [5, 'policies.fast.maxAtempts', `unknown key "maxAtempts"; did you mean 'maxAttempts'?`],
    ])
    expect(check.issues[1]?.hint).toContain('read as retry options: "retyr" is likely retry misspelt')
  })

  it('is read as the options of the layer a tool override names when the stack lacks that layer', async () => {
    const text =
      'stack:\n  - panic-catcher\n  - retyr: fast\npolicies:\n  fast: { maxAttempts: 3 }\n  patient: { backoff: exponential, maxAtempts: 5 }\ntools:\n  search:\n    retry: patient\n'
    const check = await checkConfig(write(text))
    expect(check.issues.map((i) => [i.line, i.path])).toEqual([
      [3, 'stack[1]'],
      [6, 'policies.patient.maxAtempts'],
      [9, 'tools.search.retry'],
    ])
  })
})
