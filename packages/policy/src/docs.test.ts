import { readFileSync } from 'node:fs'
import { createStackFromConfig } from '@shallot/config'
import { createRun, createStack, LoopError } from '@shallot/core'
import { idempotency, memoryIdempotencyStore } from '@shallot/idempotency'
import { panicCatcher } from '@shallot/panic-catcher'
import { stuckLoop } from '@shallot/stuck-loop'
import { scriptedModel } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { answerLater, askingAgent } from './docs-example.js'
import { policy } from './index.js'
import { countedTools, fencedBlocks, loadYaml } from './test-tools.js'

const page = readFileSync(new URL('../../../docs/guardrails.md', import.meta.url), 'utf8')

describe('docs/guardrails.md', () => {
  it('shows the type-checked example verbatim', () => {
    const example = readFileSync(new URL('./docs-example.ts', import.meta.url), 'utf8').replace(
      "from './index.js'",
      "from '@shallot/policy'",
    )
    expect(fencedBlocks(page, 'ts').at(-1)).toEqual(example)
  })

  it('its YAML loads with the policy named, and enforces the rules it shows', async () => {
    const [yaml] = fencedBlocks(page, 'yaml')
    const config = await loadYaml(yaml as string, 'shallot.yaml')
    const { runs, tools } = countedTools()
    const stack = createStackFromConfig(config, { tools })
    const run = createRun()
    const at = (id: string, name: string, args: unknown) => stack.dispatch({ id, name, args }, { run })
    expect((await at('1', 'fetch_url', { url: 'https://api.example.com@169.254.169.254/' })).content).toContain('only api.example.com')
    expect((await at('2', 'read_file', { path: '/srv/data/../../root/.ssh/id_rsa' })).content).toContain('only files under /srv/data')
    expect((await at('3', 'delete_user', { id: 'u' })).error?.code).toBe('blocked_by_policy')
    await expect(at('4', 'transfer', { to: 'b', amountCents: 20_000 })).rejects.toSatisfy(LoopError.is)
    expect((await at('5', 'fetch_url', { url: 'https://api.example.com/v1' })).ok).toBe(true)
    expect(runs).toMatchObject({ fetch_url: 1, read_file: 0, delete_user: 0, transfer: 0 })
  })

  it('the asking agent runs an approved transfer once and reports a denied one to the model', async () => {
    const { runs, tools } = countedTools()
    const model = scriptedModel([
      {
        toolCalls: [
          { name: 'transfer', args: { to: 'bob', amountCents: 20_000 } },
          { name: 'transfer', args: { to: 'eve', amountCents: 30_000 } },
        ],
      },
      ({ lastResults }) => ({ text: lastResults.map((r) => r.content).join(' | ') }),
    ])
    const agent = askingAgent(model, tools, (request) =>
      (request.args as { to: string }).to === 'bob' ? 'approve' : { deny: 'unknown payee' },
    )
    const outcome = await agent.run({ input: 'pay' })
    const output = outcome.status === 'completed' ? outcome.output : ''
    expect(output).toMatch(/^sent 20000 to bob \| .*denied_by_user.*the user denied the call to 'transfer': unknown payee/)
    expect(runs.transfer).toBe(1)
  })

  it('answerLater runs the pending call once, and again from the same snapshot still once (idempotency inside)', async () => {
    const { runs, tools } = countedTools()
    const stack = createStack({
      tools,
      middleware: [
        panicCatcher(),
        stuckLoop(),
        policy({ rules: [{ action: 'approve', tools: 'transfer', reason: 'money' }] }),
        idempotency({ store: memoryIdempotencyStore() }),
      ],
    })
    const call = { id: 'call_1', name: 'transfer', args: { to: 'bob', amountCents: 20_000 } }
    const stopped = await stack.dispatch(call, { run: createRun({ id: 'run-42' }) }).catch((err: unknown) => err)
    expect((stopped as LoopError).kind).toBe('user_input_required')
    expect((await answerLater(stack, call, 'approve')).ok).toBe(true)
    expect((await answerLater(stack, call, 'approve')).replayed).toBe(true)
    expect((await answerLater(stack, { ...call, id: 'call_2' }, { deny: 'enough' })).error?.code).toBe('denied_by_user')
    expect(runs.transfer).toBe(1)
  })
})
