import { createAgent } from '@shallot/agent'
import { createRun, createStack, defineTool, LoopError, type RunContext, type ToolCall } from '@shallot/core'
import { approvalCheckOf, putApproval } from '@shallot/core/kit'
import { manualClock, scriptedModel } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { POLICY_STATE_KEY, type PolicyOptions, policy } from './index.js'
import { countedTools } from './test-tools.js'

const capWrites = { id: 'writes', action: 'deny' as const, effect: 'write' as const, maxPerRun: 2, reason: 'at most 2 writes per run' }
const write = (id: string, amountCents = 1): ToolCall => ({ id, name: 'transfer', args: { to: 'bob', amountCents } })
const countIn = (run: RunContext) => (run.state[POLICY_STATE_KEY] as { counts?: Record<string, number> } | undefined)?.counts?.writes ?? 0

function setup(options: PolicyOptions) {
  const clock = manualClock()
  const { runs, tools } = countedTools()
  const stack = createStack({ tools, clock, middleware: [policy(options)] })
  return { clock, runs, stack }
}

describe('maxPerRun holds for any number of parallel calls', () => {
  it('runs exactly 2 of six writes a model sends in one turn, and the model reads why the other four were refused', async () => {
    const { runs, tools } = countedTools()
    const six = Array.from({ length: 6 }, (_, i) => write(`call_${i + 1}`))
    const read = (content: string) => (content.includes('blocked by policy: at most 2 writes per run') ? 'blocked' : content)
    const model = scriptedModel([{ toolCalls: six }, ({ lastResults }) => ({ text: lastResults.map((r) => read(r.content)).join('|') })])
    const agent = createAgent({ model, tools, middleware: [policy({ rules: [capWrites] })] })
    const outcome = await agent.run({ input: 'pay bob six times' })
    expect(runs.transfer).toBe(2)
    expect(outcome.status === 'completed' && outcome.output.split('|').sort()).toEqual([
      'blocked',
      'blocked',
      'blocked',
      'blocked',
      'sent 1 to bob',
      'sent 1 to bob',
    ])
  })

  it.each([5, 50])('runs exactly the cap of %i concurrent dispatches on one run, and the count says so', async (n) => {
    const { runs, stack } = setup({ rules: [capWrites] })
    const run = createRun()
    const results = await Promise.all(Array.from({ length: n }, (_, i) => stack.dispatch(write(String(i)), { run })))
    expect(runs.transfer).toBe(2)
    expect(results.filter((r) => r.ok)).toHaveLength(2)
    expect(results.filter((r) => r.error?.code === 'blocked_by_policy')).toHaveLength(n - 2)
    expect(countIn(run)).toBe(2)
  })

  it('holds when an async check of an earlier rule keeps every call waiting before the cap is read', async () => {
    let open: () => void = () => {}
    const gate = new Promise<void>((resolve) => {
      open = resolve
    })
    const { runs, stack } = setup({
      rules: [{ action: 'deny', tools: 'transfer', when: () => gate.then(() => false) }, capWrites],
    })
    const run = createRun()
    const pending = Array.from({ length: 20 }, (_, i) => stack.dispatch(write(String(i)), { run }))
    open()
    const results = await Promise.all(pending)
    expect(results.filter((r) => r.ok)).toHaveLength(2)
    expect(runs.transfer).toBe(2)
  })

  it('counts a rule whose id is __proto__ as data, never through the prototype', async () => {
    const { runs, stack } = setup({ rules: [{ ...capWrites, id: '__proto__', maxPerRun: 1 }] })
    const run = createRun()
    const results = await Promise.all([stack.dispatch(write('1'), { run }), stack.dispatch(write('2'), { run })])
    expect(results.map((r) => r.ok).sort()).toEqual([false, true])
    expect(runs.transfer).toBe(1)
    const counts = (run.state[POLICY_STATE_KEY] as { counts: object }).counts
    expect(Object.getOwnPropertyDescriptor(counts, '__proto__')?.value).toBe(1)
    expect(Object.getPrototypeOf(counts)).toBe(Object.prototype)
  })
})

describe('maxPerRun: a slot is released when the call is refused before it runs, and kept once it went inward', () => {
  it('gives the slot back when a later rule denies the call, so it never counted', async () => {
    const { runs, stack } = setup({
      rules: [capWrites, { action: 'deny', tools: 'transfer', args: [{ arg: 'amountCents', gt: 100 }], reason: 'too big' }],
    })
    const run = createRun()
    expect((await stack.dispatch(write('big', 500), { run })).error?.code).toBe('blocked_by_policy')
    expect(countIn(run)).toBe(0)
    expect((await stack.dispatch(write('1'), { run })).ok).toBe(true)
    expect((await stack.dispatch(write('2'), { run })).ok).toBe(true)
    expect((await stack.dispatch(write('3'), { run })).content).toContain('at most 2 writes per run')
    expect(runs.transfer).toBe(2)
  })

  it('never lets more through when refused calls give their slots back while others wait (50 mixed, in parallel)', async () => {
    const { clock, runs, stack } = setup({
      rules: [
        { id: 'writes', action: 'deny', effect: 'write', maxPerRun: 7, reason: 'at most 7' },
        { action: 'deny', tools: 'transfer', when: (args) => clock.sleep((args as { amountCents: number }).amountCents).then(() => false) },
        { action: 'deny', tools: 'transfer', args: [{ arg: 'amountCents', gt: 25 }], reason: 'too big' },
      ],
    })
    const run = createRun()
    const pending = Array.from({ length: 50 }, (_, i) => stack.dispatch(write(String(i), (i * 7) % 50), { run }))
    for (let t = 0; t < 50; t++) await clock.advance(1)
    const results = await Promise.all(pending)
    const ran = results.filter((r) => r.ok).length
    expect(ran).toBeGreaterThan(0)
    expect(ran).toBeLessThanOrEqual(7)
    expect(runs.transfer).toBe(ran)
    expect(countIn(run)).toBe(ran)
  })

  it('gives the slot back when the call stops for approval, so the approved call counts once on resume', async () => {
    const { runs, stack } = setup({
      rules: [capWrites, { id: 'big', action: 'approve', tools: 'transfer', args: [{ arg: 'amountCents', gt: 100 }] }],
    })
    const run = createRun()
    await expect(stack.dispatch(write('call_9', 500), { run })).rejects.toSatisfy(
      (err: unknown) => LoopError.is(err) && err.kind === 'user_input_required',
    )
    expect(countIn(run)).toBe(0)
    const resumed = createRun({ state: JSON.parse(JSON.stringify(run.state)) })
    putApproval(resumed, write('call_9', 500), 'approve')
    expect((await stack.dispatch(write('call_9', 500), { run: resumed })).ok).toBe(true)
    expect(countIn(resumed)).toBe(1)
    expect(runs.transfer).toBe(1)
  })

  it('gives the slot back when a person denies the call in process', async () => {
    const { runs, stack } = setup({
      rules: [capWrites, { action: 'approve', tools: 'transfer', args: [{ arg: 'amountCents', gt: 100 }] }],
      onApproval: () => 'deny',
    })
    const run = createRun()
    expect((await stack.dispatch(write('big', 500), { run })).error?.code).toBe('denied_by_user')
    expect(countIn(run)).toBe(0)
    expect(runs.transfer).toBe(0)
  })

  it('gives the slot back when the run is cancelled while a later rule is still being checked', async () => {
    let checking: () => void = () => {}
    const started = new Promise<void>((resolve) => {
      checking = resolve
    })
    const { runs, stack } = setup({
      rules: [
        capWrites,
        {
          action: 'deny',
          tools: 'transfer',
          when: () => {
            checking()
            return new Promise<boolean>(() => {})
          },
        },
      ],
    })
    const controller = new AbortController()
    const run = createRun({ signal: controller.signal })
    const pending = stack.dispatch(write('1'), { run })
    await started
    expect(countIn(run)).toBe(1)
    controller.abort()
    await expect(pending).rejects.toSatisfy((err: unknown) => LoopError.is(err) && err.kind === 'cancelled')
    expect(countIn(run)).toBe(0)
    expect(runs.transfer).toBe(0)
  })

  it('keeps the count of a call that ran and failed: a write that threw may have reached the world', async () => {
    let sent = 0
    const flaky = defineTool({
      name: 'transfer',
      description: 'Move money.',
      input: countedTools().transfer.input,
      effect: 'write',
      execute: () => {
        sent++
        throw new Error('connection reset after the bank accepted it')
      },
    })
    const stack = createStack({ tools: [flaky], middleware: [policy({ rules: [capWrites] })] })
    const run = createRun()
    for (const id of ['1', '2', '3']) await stack.dispatch(write(id), { run }).catch(() => undefined)
    expect(sent).toBe(2)
    expect(countIn(run)).toBe(2)
  })

  it('reads a planted or corrupt count as the cap reached, and leaves it as it was', async () => {
    const { runs, stack } = setup({ rules: [capWrites] })
    for (const planted of [-1, 1.5, '0', null, { valueOf: () => 0 }]) {
      const run = createRun({ state: { [POLICY_STATE_KEY]: { counts: { writes: planted } } } as never })
      expect((await stack.dispatch(write('1'), { run })).error?.code).toBe('blocked_by_policy')
      expect((run.state[POLICY_STATE_KEY] as { counts: Record<string, unknown> }).counts.writes).toBe(planted)
    }
    const proto = createRun({ state: JSON.parse(`{"${POLICY_STATE_KEY}":{"counts":{"__proto__":5}}}`) })
    expect((await stack.dispatch(write('1'), { run: proto })).ok).toBe(true)
    expect(runs.transfer).toBe(1)
  })

  it('takes no slot when an integration asks whether a call would stop for a person, even with a check pending', async () => {
    const { runs, transfer, tools } = countedTools()
    let open: () => void = () => {}
    const gate = new Promise<void>((resolve) => {
      open = resolve
    })
    let checking: () => void = () => {}
    const started = new Promise<void>((resolve) => {
      checking = resolve
    })
    const when = () => {
      checking()
      return gate.then(() => true)
    }
    const layer = policy({ rules: [capWrites, { action: 'approve', tools: 'transfer', when }] })
    const stack = createStack({ tools, middleware: [layer] })
    const run = createRun({ state: { [POLICY_STATE_KEY]: { counts: { writes: 1 } } } })
    const asked = approvalCheckOf(layer)?.(write('probe'), run, transfer)
    await started
    expect(countIn(run)).toBe(1)
    open()
    expect(await asked).toBe(true)
    expect(countIn(run)).toBe(1)
    await expect(stack.dispatch(write('call_1'), { run })).rejects.toSatisfy(LoopError.is)
    expect(countIn(run)).toBe(1)
    expect(runs.transfer).toBe(0)
  })
})
