import { readFileSync } from 'node:fs'
import { createStackFromConfig } from '@shallot/config'
import { createRun, LoopError } from '@shallot/core'
import { scriptedModel } from '@shallot/testing'
import { describe, expect, it, vi } from 'vitest'
import { paymentsAgent, runWithApproval } from './readme-approval-example.js'
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

  it('shows the approval example verbatim, and it runs: one write approved, one edited, one denied, each at most once', async () => {
    const example = read('./readme-approval-example.ts').replace("from './index.js'", "from '@shallot/policy'")
    expect(read('../README.md')).toContain(example)
    const { runs, tools } = countedTools()
    const model = scriptedModel([
      {
        toolCalls: [
          { id: 'pay', name: 'transfer', args: { to: 'bob', amountCents: 500 } },
          { id: 'big', name: 'transfer', args: { to: 'eve', amountCents: 90_000 } },
          { id: 'rm', name: 'delete_user', args: { id: 'u1' } },
          { id: 'look', name: 'read_file', args: { path: 'a.txt' } },
        ],
      },
      ({ lastResults }) => ({ text: lastResults.map((r) => `${r.callId}: ${r.content.slice(0, 60)}`).join('\n') }),
    ])
    const errors = vi.spyOn(console, 'error').mockImplementation(() => undefined)
    const decide = vi.fn((tool: string, args: string) =>
      tool === 'delete_user'
        ? ('deny' as const)
        : args.includes('90000')
          ? { args: { to: 'eve', amountCents: 9_000 } }
          : ('approve' as const),
    )
    const outcome = await runWithApproval(paymentsAgent(model, tools), 'pay and clean up', decide)
    const printed = String(errors.mock.calls[0]?.[0])
    errors.mockRestore()
    expect(outcome.status).toBe('completed')
    if (outcome.status !== 'completed') return
    expect(outcome.output.split('\n')).toEqual([
      'pay: sent 500 to bob',
      'big: sent 9000 to eve',
      expect.stringContaining('rm: {"error":"denied_by_user"'),
      'look: contents of a.txt',
    ])
    expect(decide).toHaveBeenCalledTimes(3)
    expect(printed).toContain(`approvals: { "pay": 'approve' | 'deny' | { args }, "big":`)
    expect(runs).toMatchObject({ transfer: 2, delete_user: 0, read_file: 1 })
    expect(model.requests).toHaveLength(2)
  })
})
