import { createAgent, memoryCheckpoints, type RunOutcome } from '@shallot/agent'
import { type Json, OptionsError } from '@shallot/core'
import { idempotency, memoryIdempotencyStore } from '@shallot/idempotency'
import { scriptedModel } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { POLICY_STATE_KEY, policy } from './index.js'
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

const pay = (id: string, amountCents = 50_000) => ({ id, name: 'transfer', args: { to: 'bob', amountCents } })

/** An agent whose model asks for `calls` in turn 1 and then answers with what it read. */
function setup(calls: ReadonlyArray<{ id: string; name: string; args: unknown }> = [pay('call_9')], withIdempotency = false) {
  const { runs, tools } = countedTools()
  const model = scriptedModel(
    [{ toolCalls: calls }, ({ lastResults }) => ({ text: `the model read: ${lastResults.map((r) => r.content).join(' | ')}` })],
    { onEnd: 'repeat' },
  )
  const checkpoints = memoryCheckpoints()
  const middleware = [policy({ rules }), ...(withIdempotency ? [idempotency({ store: memoryIdempotencyStore() })] : [])]
  const agent = createAgent({ model, tools, checkpoints, middleware })
  return { runs, model, checkpoints, agent }
}

function stopped(outcome: RunOutcome) {
  if (outcome.status !== 'stopped') throw new Error(`expected a stopped run, got ${outcome.status}`)
  return outcome
}

function completed(outcome: RunOutcome) {
  if (outcome.status !== 'completed') throw new Error(`expected a completed run, got ${outcome.status}: ${outcome.report.text}`)
  return outcome
}

describe('agent.resume(runId, { approvals }): the stopped turn is replayed with the answers', () => {
  it('stops with user_input_required, checkpoints the pending turn, and the report gives the resume command', async () => {
    const { agent, checkpoints, runs } = setup()
    const outcome = stopped(await agent.run({ input: 'pay bob', runId: 'r1' }))
    expect(outcome.error.kind).toBe('user_input_required')
    expect(outcome.report.pending).toEqual([
      { callId: 'call_9', tool: 'transfer', arguments: '{"amountCents":50000,"to":"bob"}', reason: 'transfers over $100 need a person' },
    ])
    expect(outcome.report.text).toContain(`call_9: transfer {"amountCents":50000,"to":"bob"} (transfers over $100 need a person)`)
    expect(outcome.report.nextSteps).toContain(`agent.resume("r1", { approvals: { "call_9": 'approve' | 'deny' | { args } } })`)
    const snapshot = await checkpoints.load('r1')
    expect(snapshot?.status).toBe('stopped')
    expect(snapshot?.turn).toBe(0)
    expect(snapshot?.pendingTurn).toMatchObject({ turn: 1, response: { toolCalls: [pay('call_9')] }, results: {} })
    expect(snapshot?.pendingTurn?.pending).toHaveLength(1)
    // The model never read half a turn: the transcript holds only the task.
    expect(snapshot?.transcript).toEqual([{ role: 'user', content: 'pay bob' }])
    expect(runs.transfer).toBe(0)
  })

  it("'approve' runs the tool exactly once, asks the model nothing for the stopped turn, and the run completes", async () => {
    const { agent, checkpoints, model, runs } = setup()
    await agent.run({ input: 'pay bob', runId: 'r1' })
    expect(model.requests).toHaveLength(1)
    const outcome = completed(await agent.resume('r1', { approvals: { call_9: 'approve' } }))
    expect(outcome.output).toBe('the model read: sent 50000 to bob')
    expect(runs.transfer).toBe(1)
    // One more model call: the one after the replayed turn, which sees the call and its result once.
    expect(model.requests).toHaveLength(2)
    const seen = model.requests[1]?.messages ?? []
    expect(seen.filter((m) => m.role === 'assistant')).toHaveLength(1)
    expect(seen.filter((m) => m.role === 'tool').map((m) => m.role === 'tool' && m.callId)).toEqual(['call_9'])
    expect(outcome.turns).toBe(2)
    const snapshot = await checkpoints.load('r1')
    expect(snapshot?.status).toBe('completed')
    expect(snapshot?.pendingTurn).toBeUndefined()
  })

  it("'deny' and { deny } come back to the model as denied_by_user; the tool never runs", async () => {
    for (const [answer, expected] of [
      ['deny', "the user denied the call to 'transfer'"],
      [{ deny: 'ask finance first' }, "the user denied the call to 'transfer': ask finance first"],
    ] as const) {
      const { agent, runs } = setup()
      await agent.run({ input: 'pay bob', runId: 'r1' })
      const outcome = completed(await agent.resume('r1', { approvals: { call_9: answer } }))
      expect(outcome.output).toContain(expected)
      expect(runs.transfer).toBe(0)
    }
  })

  it('{ args } runs the tool with the edited arguments, and edited arguments the schema refuses are invalid_arguments', async () => {
    const { agent, runs } = setup()
    await agent.run({ input: 'pay bob', runId: 'r1' })
    const outcome = completed(await agent.resume('r1', { approvals: { call_9: { args: { to: 'alice', amountCents: 20_000 } } } }))
    expect(outcome.output).toBe('the model read: sent 20000 to alice')
    expect(runs.transfer).toBe(1)

    const second = setup()
    await second.agent.run({ input: 'pay bob', runId: 'r2' })
    const refused = completed(await second.agent.resume('r2', { approvals: { call_9: { args: { to: 'alice', amountCents: 'lots' } } } }))
    expect(refused.output).toContain('Invalid arguments for transfer')
    expect(second.runs.transfer).toBe(0)
  })

  it('a turn of several calls names every pending one, runs the others once, and keeps them across the stop', async () => {
    const calls = [pay('a'), { id: 'r', name: 'read_file', args: { path: 'notes.txt' } }, pay('b', 70_000)]
    const { agent, checkpoints, runs } = setup(calls)
    const outcome = stopped(await agent.run({ input: 'pay both', runId: 'r1' }))
    expect(outcome.report.pending.map((p) => p.callId)).toEqual(['a', 'b'])
    expect(runs.read_file).toBe(1)
    expect(Object.keys((await checkpoints.load('r1'))?.pendingTurn?.results ?? {})).toEqual(['r'])

    // Only one answered: the replay stops again naming the other; what ran is kept, not re-run.
    const again = stopped(await agent.resume('r1', { approvals: { a: 'approve' } }))
    expect(again.report.pending.map((p) => p.callId)).toEqual(['b'])
    expect(Object.keys((await checkpoints.load('r1'))?.pendingTurn?.results ?? {}).sort()).toEqual(['a', 'r'])
    expect(runs).toMatchObject({ transfer: 1, read_file: 1 })

    const done = completed(await agent.resume('r1', { approvals: { b: 'deny' } }))
    expect(done.output).toMatch(/^the model read: sent 50000 to bob \| contents of notes.txt \| \{"error":"denied_by_user",/)
    expect(runs).toMatchObject({ transfer: 1, read_file: 1 })
  })
})

describe('agent.resume(runId, { approvals }): hostile answers', () => {
  it('an answer to a call that is not pending is a TypeError naming it and the pending ids; nothing runs', async () => {
    const { agent, runs, model } = setup([pay('call_9'), pay('call_10')])
    await agent.run({ input: 'pay bob', runId: 'r1' })
    await expect(agent.resume('r1', { approvals: { call_99: 'approve' } })).rejects.toThrow(
      new TypeError('agent.resume(): call "call_99" is not pending in run "r1"; pending: "call_9", "call_10"'),
    )
    expect(runs.transfer).toBe(0)
    expect(model.requests).toHaveLength(1)
  })

  it('a malformed answer is an OptionsError naming the call and the allowed answers, before anything is saved', async () => {
    const { agent, checkpoints } = setup()
    await agent.run({ input: 'pay bob', runId: 'r1' })
    const before = JSON.stringify(await checkpoints.load('r1'))
    for (const bad of ['yes', { approve: true }, { args: { to: 'x', amountCents: 1 }, deny: 'no' }, { args: undefined }, 42, null]) {
      const attempt = agent.resume('r1', { approvals: { call_9: bad as never } })
      await expect(attempt).rejects.toBeInstanceOf(OptionsError)
      await expect(attempt).rejects.toThrow('agent.resume(): approvals["call_9"]')
    }
    await expect(agent.resume('r1', { approvals: ['approve'] as never })).rejects.toThrow('expected an object of answers by call id')
    await expect(agent.resume('r1', { approval: {} } as never)).rejects.toThrow(`did you mean 'approvals'?`)
    expect(JSON.stringify(await checkpoints.load('r1'))).toBe(before)
  })

  it('__proto__ as a call id is data: it is answered like any other and pollutes nothing', async () => {
    const { agent, runs, checkpoints } = setup([pay('__proto__')])
    const outcome = stopped(await agent.run({ input: 'pay bob', runId: 'r1' }))
    expect(outcome.report.pending.map((p) => p.callId)).toEqual(['__proto__'])
    const approvals = JSON.parse('{"__proto__":"approve"}') as Record<string, 'approve'>
    const done = completed(await agent.resume('r1', { approvals }))
    expect(done.output).toBe('the model read: sent 50000 to bob')
    expect(runs.transfer).toBe(1)
    expect(({} as Record<string, unknown>).approve).toBeUndefined()
    const state = (await checkpoints.load('r1'))?.state[POLICY_STATE_KEY] as { consumed: Record<string, Json> }
    expect(Object.hasOwn(state.consumed, '__proto__')).toBe(true)
  })

  it('resuming twice with the same approval never runs the tool twice', async () => {
    const { agent, runs, model } = setup()
    await agent.run({ input: 'pay bob', runId: 'r1' })
    const first = completed(await agent.resume('r1', { approvals: { call_9: 'approve' } }))
    const second = completed(await agent.resume('r1', { approvals: { call_9: 'approve' } }))
    expect(second.output).toBe(first.output)
    expect(runs.transfer).toBe(1)
    expect(model.requests).toHaveLength(2)
  })

  it('two resumes of the same answered snapshot (a crash before the turn was checkpointed) run the write once with idempotency', async () => {
    const { agent, checkpoints, runs } = setup([pay('call_9')], true)
    await agent.run({ input: 'pay bob', runId: 'r1' })
    // What a process killed during the replay leaves: the snapshot saved with the answers, before the replay.
    const saves: string[] = []
    const save = checkpoints.save.bind(checkpoints)
    checkpoints.save = (snapshot) => {
      saves.push(JSON.stringify(snapshot))
      return save(snapshot)
    }
    completed(await agent.resume('r1', { approvals: { call_9: 'approve' } }))
    const answered = JSON.parse(saves[0] as string)
    expect(answered.pendingTurn.turn).toBe(1)
    // Bound to the call it answers: its turn, tool and arguments.
    expect(answered.state[POLICY_STATE_KEY].approvals).toEqual({
      call_9: { answer: 'approve', turn: 1, tool: 'transfer', digest: expect.stringMatching(/^[0-9a-f]{32}$/) },
    })
    save(answered)
    const again = completed(await agent.resume('r1'))
    expect(again.output).toBe('the model read: sent 50000 to bob')
    expect(runs.transfer).toBe(1)
  })

  it('approvals for a run that waits for none are refused; a resume without approvals stops again at the same call', async () => {
    const { agent, model, runs } = setup()
    await agent.run({ input: 'pay bob', runId: 'r1' })
    const again = stopped(await agent.resume('r1'))
    expect(again.report.pending.map((p) => p.callId)).toEqual(['call_9'])
    expect(model.requests).toHaveLength(1)
    expect(runs.transfer).toBe(0)

    // A run stopped for another reason (cancelled) waits for no approval.
    const unfinished = createAgent({ model: scriptedModel([{ text: 'done' }]), tools: [], checkpoints: memoryCheckpoints() })
    expect(stopped(await unfinished.run({ input: 'x', runId: 'r3', signal: AbortSignal.abort() })).error.kind).toBe('cancelled')
    await expect(unfinished.resume('r3', { approvals: { c: 'approve' } })).rejects.toThrow(
      'agent.resume(): run "r3" waits for no approval, so approvals["c"] answers nothing; resume it without approvals',
    )
  })
})
