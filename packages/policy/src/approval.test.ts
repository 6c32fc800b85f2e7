import { createAgent, memoryCheckpoints } from '@shallot/agent'
import { createRun, createStack, type Json, LoopError } from '@shallot/core'
import { approvalBinding } from '@shallot/core/kit'
import { idempotency, memoryIdempotencyStore } from '@shallot/idempotency'
import { manualClock, scriptedModel } from '@shallot/testing'
import { describe, expect, it, vi } from 'vitest'
import { type ApprovalRequest, type OnApproval, type PendingApproval, POLICY_STATE_KEY, policy } from './index.js'
import { countedTools } from './test-tools.js'

const rules = [
  {
    id: 'big-transfer',
    action: 'approve' as const,
    tools: 'transfer',
    args: [{ arg: 'amountCents', gt: 10_000 }],
    reason: 'transfers over $100 need a person',
  },
]
const bigTransfer = { id: 'call_9', name: 'transfer', args: { to: 'postgres://app:hunter2@10.0.0.5/db', amountCents: 50_000 } }
/** A run state holding `answer`, bound (as `agent.resume` and `putApproval` write it) to bigTransfer in turn 0. */
const bound = (answer: Json) => ({ answer, ...approvalBinding(bigTransfer, 0) })
const answered = (answer: Json) => ({ [POLICY_STATE_KEY]: { approvals: { call_9: bound(answer) } } })

function setup({ withIdempotency, ...options }: { onApproval?: OnApproval; approvalTimeoutMs?: number; withIdempotency?: boolean } = {}) {
  const clock = manualClock()
  const { runs, tools, transfer } = countedTools()
  const sent: unknown[] = []
  const spy = {
    ...transfer,
    execute: (args: { to: string; amountCents: number }, context: Parameters<typeof transfer.execute>[1]) => {
      sent.push(args)
      return transfer.execute(args, context)
    },
  }
  const store = memoryIdempotencyStore()
  const stack = createStack({
    tools: [spy, ...tools.slice(1)],
    clock,
    middleware: [policy({ rules, ...options }), ...(withIdempotency ? [idempotency({ store })] : [])],
  })
  return { clock, runs, stack, sent, store }
}

describe('approval without a callback: the run stops and names the pending call', () => {
  it('stops with user_input_required whose details name the call exactly, sanitized; the tool never ran', async () => {
    const { runs, stack } = setup()
    const run = createRun()
    const stopped = await stack.dispatch(bigTransfer, { run }).catch((err: unknown) => err)
    expect(stopped).toSatisfy(LoopError.is)
    const error = stopped as LoopError
    expect(error.kind).toBe('user_input_required')
    expect(error.message).toBe("call call_9 to 'transfer' needs approval: transfers over $100 need a person")
    expect(error.details.pending).toEqual([
      {
        callId: 'call_9',
        tool: 'transfer',
        arguments: '{"amountCents":50000,"to":"postgres://[redacted]@[redacted]/db"}',
        reason: 'transfers over $100 need a person',
        rule: 'big-transfer',
        digest: approvalBinding(bigTransfer, 0).digest,
      },
    ] satisfies PendingApproval[])
    expect(error.details.stateKey).toBe('shallot.policy')
    expect(runs.transfer).toBe(0)
    // Calls no approval rule matches are not held up.
    expect((await stack.dispatch({ id: 'small', name: 'transfer', args: { to: 'bob', amountCents: 500 } }, { run })).ok).toBe(true)
  })

  it('on resume, an approval in the run state runs the call once; the same approval again runs nothing', async () => {
    const { runs, stack } = setup()
    const run = createRun({ state: answered('approve') })
    const first = await stack.dispatch(bigTransfer, { run })
    expect(first.ok).toBe(true)
    const again = await stack.dispatch(bigTransfer, { run })
    expect(again.error?.code).toBe('approval_used')
    expect(runs.transfer).toBe(1)
    expect(run.state[POLICY_STATE_KEY]).toEqual({ approvals: {}, consumed: { call_9: { turn: 0, as: 'approve' } } })
    // The same state, checkpointed and resumed (the consumed mark travels with it): still nothing twice.
    const resumed = createRun({
      state: JSON.parse(
        JSON.stringify({
          ...run.state,
          ...answered('approve'),
          [POLICY_STATE_KEY]: { ...(run.state[POLICY_STATE_KEY] as object), approvals: { call_9: bound('approve') } },
        }),
      ),
    })
    expect((await stack.dispatch(bigTransfer, { run: resumed })).error?.code).toBe('approval_used')
    expect(runs.transfer).toBe(1)
  })

  it('with idempotency inside, resuming the same snapshot twice (a crash lost the consumed mark) runs the tool once', async () => {
    const { runs, stack } = setup({ withIdempotency: true })
    const snapshot = JSON.stringify(answered('approve'))
    const first = await stack.dispatch(bigTransfer, { run: createRun({ id: 'run-1', state: JSON.parse(snapshot) }) })
    const second = await stack.dispatch(bigTransfer, { run: createRun({ id: 'run-1', state: JSON.parse(snapshot) }) })
    expect(first.ok && second.ok).toBe(true)
    expect(second.replayed).toBe(true)
    expect(second.content).toBe(first.content)
    expect(runs.transfer).toBe(1)
  })

  it('a denial comes back as denied_by_user with the human reason; the tool never runs', async () => {
    const { runs, stack } = setup()
    const plain = await stack.dispatch(bigTransfer, { run: createRun({ state: answered('deny') }) })
    const why = await stack.dispatch(bigTransfer, { run: createRun({ state: answered({ deny: 'not before the audit' }) }) })
    expect(plain.error?.code).toBe('denied_by_user')
    expect(plain.content).toContain("the user denied the call to 'transfer'")
    expect(why.content).toContain("the user denied the call to 'transfer': not before the audit")
    expect(why.error?.hint).toContain('do not repeat this call')
    expect(runs.transfer).toBe(0)
  })

  it('edited arguments are validated with the tool schema and the tool runs with them', async () => {
    const { runs, stack, sent } = setup()
    const edited = await stack.dispatch(bigTransfer, { run: createRun({ state: answered({ args: { to: 'bob', amountCents: 9_000 } }) }) })
    expect(edited.ok).toBe(true)
    expect(sent).toEqual([{ to: 'bob', amountCents: 9_000 }])
    const invalid = await stack.dispatch(bigTransfer, { run: createRun({ state: answered({ args: { to: 'bob', amountCents: 'lots' } }) }) })
    expect(invalid.error?.code).toBe('invalid_arguments')
    expect(invalid.content).toContain('amountCents')
    const polluted = await stack.dispatch(bigTransfer, {
      run: createRun({ state: answered({ args: JSON.parse('{"to":"b","amountCents":1,"__proto__":{"admin":true}}') }) }),
    })
    expect(polluted.error?.code).toBe('invalid_arguments')
    expect(polluted.content).toContain('__proto__ is not an allowed argument name')
    expect(runs.transfer).toBe(1)
  })

  it('an answer it does not understand stops the run again, saying so, rather than guessing', async () => {
    const { runs, stack } = setup()
    for (const answer of ['yes', { approve: true }, 42, ['approve']] as Json[]) {
      const error = (await stack
        .dispatch(bigTransfer, { run: createRun({ state: answered(answer) }) })
        .catch((err: unknown) => err)) as LoopError
      expect(error.kind).toBe('user_input_required')
      expect((error.details.pending as PendingApproval[])[0]?.problem).toContain("is not 'approve', 'deny'")
    }
    // A snapshot with garbage in the policy's slot is repaired, never trusted.
    const garbage = createRun({ state: { [POLICY_STATE_KEY]: 'oops', other: 1 } })
    await expect(stack.dispatch(bigTransfer, { run: garbage })).rejects.toSatisfy(LoopError.is)
    expect(runs.transfer).toBe(0)
  })

  it('a call id like __proto__ is data in the run state, never the prototype', async () => {
    const { runs, stack } = setup()
    const record = JSON.stringify({ answer: 'approve', ...approvalBinding(bigTransfer, 0) })
    const state = JSON.parse(`{"shallot.policy":{"approvals":{"__proto__":${record}}}}`) as Record<string, Json>
    const run = createRun({ state })
    expect((await stack.dispatch({ ...bigTransfer, id: '__proto__' }, { run })).ok).toBe(true)
    expect(Object.getPrototypeOf((run.state[POLICY_STATE_KEY] as Record<string, unknown>).consumed)).toBe(Object.prototype)
    expect((await stack.dispatch({ ...bigTransfer, id: '__proto__' }, { run })).error?.code).toBe('approval_used')
    expect(runs.transfer).toBe(1)
  })
})

describe('approval with onApproval: asked in process', () => {
  it('passes the request and acts on approve, deny, { deny } and { args }', async () => {
    const answers: Array<'approve' | 'deny' | { deny: string } | { args: unknown }> = [
      'approve',
      'deny',
      { deny: 'too much' },
      { args: { to: 'bob', amountCents: 1 } },
    ]
    const requests: ApprovalRequest[] = []
    const { runs, stack, sent } = setup({
      onApproval: async (request) => {
        requests.push(request)
        return answers.shift() as 'approve'
      },
    })
    const results = []
    for (const id of ['a', 'b', 'c', 'd']) results.push(await stack.dispatch({ ...bigTransfer, id }))
    expect(results.map((r) => r.error?.code ?? 'ok')).toEqual(['ok', 'denied_by_user', 'denied_by_user', 'ok'])
    expect(results[2]?.content).toContain(': too much')
    expect(sent).toEqual([bigTransfer.args, { to: 'bob', amountCents: 1 }])
    expect(runs.transfer).toBe(2)
    expect(requests[0]).toMatchObject({
      callId: 'a',
      tool: 'transfer',
      rule: 'big-transfer',
      reason: 'transfers over $100 need a person',
      args: bigTransfer.args,
    })
    expect(requests[0]?.arguments).not.toContain('hunter2')
  })

  it('denies when no answer comes within the timeout, on the clock; the late answer changes nothing and the ask is aborted', async () => {
    let late: ((answer: 'approve') => void) | undefined
    let askSignal: AbortSignal | undefined
    const { clock, runs, stack } = setup({
      approvalTimeoutMs: 60_000,
      onApproval: (request) => {
        askSignal = request.signal
        return new Promise((resolve) => {
          late = resolve
        })
      },
    })
    const pending = stack.dispatch(bigTransfer)
    await clock.advance(59_999)
    await clock.advance(1)
    const result = await pending
    expect(result.error?.code).toBe('denied_by_user')
    expect(result.content).toContain('no answer within 60s')
    expect(askSignal?.aborted).toBe(true)
    late?.('approve')
    await Promise.resolve()
    expect(runs.transfer).toBe(0)
    expect(clock.pending).toBe(0)
  })

  it('fails closed when the callback throws or answers nonsense, and logs it', async () => {
    const error = vi.fn()
    const logger = { debug() {}, info() {}, warn() {}, error, child: () => logger }
    const { tools, runs } = countedTools()
    const callbacks: OnApproval[] = [
      () => {
        throw new Error('ui crashed')
      },
      async () => 'maybe' as 'approve',
    ]
    for (const onApproval of callbacks) {
      const stack = createStack({ tools, logger, middleware: [policy({ rules, onApproval })] })
      const result = await stack.dispatch(bigTransfer)
      expect(result.error?.code).toBe('denied_by_user')
    }
    expect(error).toHaveBeenCalledTimes(2)
    expect(runs.transfer).toBe(0)
  })

  it('stops waiting when the run is cancelled, and the ask is aborted', async () => {
    let askSignal: AbortSignal | undefined
    let asked: () => void = () => {}
    const wasAsked = new Promise<void>((resolve) => {
      asked = resolve
    })
    const { runs, stack } = setup({
      onApproval: (request) => {
        askSignal = request.signal
        asked()
        return new Promise(() => {})
      },
    })
    const controller = new AbortController()
    const pending = stack.dispatch(bigTransfer, { run: createRun({ signal: controller.signal }) })
    await wasAsked
    controller.abort()
    await expect(pending).rejects.toSatisfy((err: unknown) => LoopError.is(err) && err.kind === 'cancelled')
    expect(askSignal?.aborted).toBe(true)
    expect(runs.transfer).toBe(0)
  })
})

describe('approval in an agent', () => {
  const script = () =>
    scriptedModel([
      { toolCalls: [{ id: 'call_9', name: 'transfer', args: { to: 'bob', amountCents: 50_000 } }] },
      ({ lastResults }) => ({ text: `the model read: ${lastResults[0]?.content}` }),
    ])

  it('with onApproval, a denial reaches the model as denied_by_user and the run goes on', async () => {
    const { runs, tools } = countedTools()
    const onApproval = vi.fn(async () => ({ deny: 'ask finance first' }))
    const agent = createAgent({ model: script(), tools, middleware: [policy({ rules, onApproval })] })
    const outcome = await agent.run({ input: 'pay bob' })
    expect(outcome.status).toBe('completed')
    if (outcome.status === 'completed') expect(outcome.output).toContain("the user denied the call to 'transfer': ask finance first")
    expect(onApproval).toHaveBeenCalledTimes(1)
    expect(runs.transfer).toBe(0)
  })

  it('with onApproval approving, the tool runs once and the next request describes the restriction', async () => {
    const { runs, tools } = countedTools()
    const model = script()
    const agent = createAgent({ model, tools, middleware: [policy({ rules, onApproval: () => 'approve' })] })
    const outcome = await agent.run({ input: 'pay bob' })
    expect(outcome.status === 'completed' && outcome.output).toBe('the model read: sent 50000 to bob')
    expect(runs.transfer).toBe(1)
    const described = model.requests[1]?.tools.find((t) => t.name === 'transfer')?.description
    expect(described).toBe(
      "Policy: needs a person's approval when amountCents > 10000 (transfers over $100 need a person); otherwise allowed. Move money between accounts.",
    )
  })

  it('without onApproval, the run stops with the pending call in its outcome and a checkpoint', async () => {
    const { runs, tools } = countedTools()
    const checkpoints = memoryCheckpoints()
    const agent = createAgent({ model: script(), tools, checkpoints, middleware: [policy({ rules })] })
    const outcome = await agent.run({ input: 'pay bob', runId: 'r1' })
    expect(outcome.status).toBe('stopped')
    if (outcome.status !== 'stopped') return
    expect(outcome.error.kind).toBe('user_input_required')
    expect((outcome.error.details.pending as PendingApproval[]).map((p) => [p.callId, p.tool])).toEqual([['call_9', 'transfer']])
    expect(outcome.report.text).toContain('transfers over $100 need a person')
    expect((await checkpoints.load('r1'))?.status).toBe('stopped')
    expect(runs.transfer).toBe(0)
  })
})
