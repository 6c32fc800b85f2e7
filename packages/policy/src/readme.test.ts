import { readFileSync } from 'node:fs'
import { createStackFromConfig } from '@shallot/config'
import { createRun, LoopError } from '@shallot/core'
import { describe, expect, it } from 'vitest'
import { guardedStack } from './readme-example.js'
import { countedTools, fencedBlocks, loadYaml } from './test-tools.js'

const read = (file: string) => readFileSync(new URL(file, import.meta.url), 'utf8')

describe('README', () => {
  it('shows the type-checked example verbatim (importing the published name)', () => {
    const example = read('./readme-example.ts').replace("from './index.js'", "from '@shallot/policy'")
    expect(read('../README.md')).toContain(example)
  })

  it('runs: reads outside the root, deletes, a sixth write and a big transfer never reach their tools', async () => {
    const { runs, tools } = countedTools()
    const stack = guardedStack(tools)
    const run = createRun()
    expect((await stack.dispatch({ id: '1', name: 'read_file', args: { path: '/srv/data/a.csv' } }, { run })).ok).toBe(true)
    expect((await stack.dispatch({ id: '2', name: 'read_file', args: { path: '/srv/data/../../etc/shadow' } }, { run })).error?.code).toBe(
      'blocked_by_policy',
    )
    expect((await stack.dispatch({ id: '3', name: 'delete_user', args: { id: 'u' } }, { run })).error?.code).toBe('blocked_by_policy')
    await expect(stack.dispatch({ id: '4', name: 'transfer', args: { to: 'b', amountCents: 50_000 } }, { run })).rejects.toSatisfy(
      LoopError.is,
    )
    for (let i = 0; i < 5; i++)
      expect((await stack.dispatch({ id: `w${i}`, name: 'transfer', args: { to: 'b', amountCents: 100 } }, { run })).ok).toBe(true)
    const sixth = await stack.dispatch({ id: 'w6', name: 'transfer', args: { to: 'b', amountCents: 100 } }, { run })
    expect(sixth.content).toContain('at most 5 writes per run')
    expect(runs).toMatchObject({ read_file: 1, delete_user: 0, transfer: 5 })
  })

  it('the YAML sample loads and denies deletes', async () => {
    const [yaml] = fencedBlocks(read('../README.md'), 'yaml')
    const config = await loadYaml(yaml as string, 'README.yaml')
    const { runs, tools } = countedTools()
    const stack = createStackFromConfig(config, { tools })
    expect((await stack.dispatch({ id: '1', name: 'delete_file', args: { path: '/a' } })).content).toContain('nothing is deleted here')
    expect(runs.delete_file).toBe(0)
  })
})
