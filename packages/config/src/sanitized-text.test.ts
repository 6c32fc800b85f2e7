import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { defineTool, type ToolResult } from '@shallot/core'
import { afterAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createStackFromConfig, loadConfig } from './index.js'

const dir = mkdtempSync(join(tmpdir(), 'shallot-text-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let files = 0
const load = (text: string) => {
  const file = join(dir, `shallot-${++files}.yaml`)
  writeFileSync(file, text)
  return loadConfig(file)
}

const throwing = (name: string, message: string) =>
  defineTool({
    name,
    description: name,
    input: z.object({}),
    effect: 'read',
    execute: () => {
      throw new Error(message)
    },
  })

const corpus: [kind: string, text: string, secret: string][] = [
  ['an Anthropic key', 'key sk-ant-api03-Zx8Yw7Vu6Ts5Rq4Po3Nm2Lk', 'Zx8Yw7Vu6Ts5Rq4Po3Nm2Lk'],
  ['an AWS access key id', 'as AKIAIOSFODNN7EXAMPLE', 'IOSFODNN7EXAMPLE'],
  ['a Slack token', 'token xoxb-123456789012-abcdefghijKLMN', '123456789012-abcdefghijKLMN'],
  ['a JWT', 'session eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbm4ifQ.sflKxwRJSMeKKF2QT4fwpM', 'eyJzdWIiOiJhbm4ifQ'],
  ['a Bearer header', 'Authorization: Bearer Zm9vYmFyYmF6cXV4MTIzNDU2', 'Zm9vYmFyYmF6cXV4MTIzNDU2'],
  ['a password in a URL', 'at redis://default:hunter2pass@cache.example.com', 'hunter2pass'],
  ['an internal host', 'ENOTFOUND billing.prod.internal', 'billing.prod'],
  ['a home path', '/home/zoltan-k/app', 'zoltan-k'],
  ['an e-mail address', 'owner ann.lee@example.com', 'ann.lee'],
]

function expectClean(result: ToolResult, secret: string) {
  expect(result.ok).toBe(false)
  const text = `${result.content}\n${JSON.stringify(result.error)}`
  expect(text).not.toContain(secret)
  expect(text).toContain('[redacted]')
}

describe('a stack built from a config file sanitizes what the model reads', () => {
  it.each(corpus)('the default layers, given a tool that throws %s', async (_kind, text, secret) => {
    const config = await load('stack: [panic-catcher, stuck-loop, idempotency, circuit-breaker, retry, error-classifier, timeout]\n')
    const stack = createStackFromConfig(config, { tools: [throwing('search', `upstream said: ${text}`)] })
    expectClean(await stack.dispatch({ id: 'c1', name: 'search', args: {} }), secret)
  })

  it("applies the file's classifier secrets, also set per tool, to text the panic catcher wrote", async () => {
    const config = await load(
      [
        'stack:',
        '  - panic-catcher',
        '  - error-classifier: { secrets: [tenant-9f31c] }',
        'tools:',
        '  billing:',
        '    error-classifier: { secrets: [acct-55aa01] }',
        '',
      ].join('\n'),
    )
    const stack = createStackFromConfig(config, {
      tools: [throwing('search', 'no tenant tenant-9f31c'), throwing('billing', 'no account acct-55aa01')],
    })
    const search = await stack.dispatch({ id: 'c1', name: 'search', args: {} })
    expect(search.error?.code).toBe('tool_panic')
    expectClean(search, 'tenant-9f31c')
    expectClean(await stack.dispatch({ id: 'c2', name: 'billing', args: {} }), 'acct-55aa01')
  })

  it('applies the secrets given in code to a config-built stack, and keeps them across reconfigure', async () => {
    const config = await load('stack: [panic-catcher]\n')
    const stack = createStackFromConfig(config, { tools: [throwing('search', 'no tenant tenant-9f31c')], secrets: [/tenant-[0-9a-f]{5}/] })
    expectClean(await stack.dispatch({ id: 'c1', name: 'search', args: {} }), 'tenant-9f31c')
    stack.reconfigure(await load('stack: [panic-catcher, error-classifier]\n'))
    expectClean(await stack.dispatch({ id: 'c2', name: 'search', args: {} }), 'tenant-9f31c')
  })
})
