import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ConfigError, configJsonSchema, createStackFromConfig, loadConfig } from '@shallot/config'
import { createRun, LoopError } from '@shallot/core'
import { afterAll, describe, expect, it } from 'vitest'
import { policyDefinition } from './index.js'
import { countedTools } from './test-tools.js'

const dir = mkdtempSync(join(tmpdir(), 'shallot-policy-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const file = (name: string, text: string) => {
  const path = join(dir, name)
  writeFileSync(path, text)
  return path
}

describe('policy in a config file', () => {
  it('reads the rules from YAML and enforces them like the code form', async () => {
    const path = file(
      'ok.yaml',
      `stack:
  - policy:
      rules:
        - { action: allow, tools: read_file, args: [{ arg: path, under: /srv/data }] }
        - { action: deny, tools: read_file, reason: only files under /srv/data }
        - { id: big, action: approve, tools: transfer, args: [{ arg: amountCents, gt: 10000 }], reason: over $100 }
  - timeout
`,
    )
    const config = await loadConfig(path, { middleware: [policyDefinition] })
    const { runs, tools } = countedTools()
    const stack = createStackFromConfig(config, { tools })
    expect((await stack.dispatch({ id: '1', name: 'read_file', args: { path: '/srv/data/../etc/passwd' } })).content).toContain(
      'blocked by policy: only files under /srv/data',
    )
    await expect(
      stack.dispatch({ id: '2', name: 'transfer', args: { to: 'b', amountCents: 20_000 } }, { run: createRun() }),
    ).rejects.toSatisfy((err: unknown) => LoopError.is(err) && err.kind === 'user_input_required')
    expect(runs).toMatchObject({ read_file: 0, transfer: 0 })
  })

  it('refuses bad rules with the line they are on and what was wrong', async () => {
    const path = file(
      'bad.yaml',
      `stack:
  - policy:
      rules:
        - action: deny
          tools: delete_*
        - action: allow
          args:
            - arg: path
              under: relative/dir
`,
    )
    const error = (await loadConfig(path, { middleware: [policyDefinition] }).catch((err: unknown) => err)) as ConfigError
    expect(error).toBeInstanceOf(ConfigError)
    expect(error.message).toMatch(/bad\.yaml:9/)
    expect(error.message).toContain('must be an absolute path')
  })

  it('joins the editor JSON Schema when named, with its rule schema in place', () => {
    const schema = JSON.stringify(configJsonSchema([policyDefinition]))
    expect(schema).toContain('"hostIn"')
    expect(schema).toContain('"approve"')
    expect(schema).toContain('"maxPerRun"')
  })
})
