import { type CheckpointStore, createAgent, memoryCheckpoints, type RunOutcome } from '@shallot/agent'
import type { Json, Middleware } from '@shallot/core'
import { manualClock, scriptedModel } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { POLICY_STATE_KEY, type PolicyOptions, policy } from './index.js'
import { countedTools } from './test-tools.js'

// Decision 600: an approval given before a run stopped is checked again, on resume, against the policy in force then.

type Rules = NonNullable<PolicyOptions['rules']>

const bigTransfer = {
  id: 'big-transfer',
  action: 'approve' as const,
  tools: 'transfer',
  args: [{ arg: 'amountCents', gt: 10_000 }],
  reason: 'transfers over $100 need a person',
}
const deletes = { id: 'deletes', action: 'approve' as const, tools: 'delete_user', reason: 'deleting a user needs a person' }

const pay = (id: string, amountCents = 50_000) => ({ id, name: 'transfer', args: { to: 'bob', amountCents } })
const removeUser = (id: string) => ({ id, name: 'delete_user', args: { id: 'u-7' } })

/**
 * One run, as two processes see it: `before` stops it for approval under the first policy; `after(middleware)`
 * is the agent a restarted process builds from the policy file as it reads now, on the same checkpoints.
 */
async function stoppedUnder(rules: Rules, calls: ReadonlyArray<{ id: string; name: string; args: Json }> = [pay('call_9')]) {
  const { runs, tools } = countedTools()
  const checkpoints = memoryCheckpoints()
  const clock = manualClock()
  const first = createAgent({
    model: scriptedModel([{ toolCalls: calls }]),
    tools,
    checkpoints,
    clock,
    middleware: [policy({ rules })],
  })
  const outcome = await first.run({ input: 'pay bob', runId: 'r1' })
  if (outcome.status !== 'stopped' || outcome.error.kind !== 'user_input_required')
    throw new Error(`expected a stop for approval, got ${outcome.status}`)
  const after = (middleware: Middleware[]) =>
    createAgent({
      model: scriptedModel([({ lastResults }) => ({ text: `the model read: ${lastResults.map((r) => r.content).join(' | ')}` })], {
        onEnd: 'repeat',
      }),
      tools,
      checkpoints,
      clock,
      middleware,
    })
  return { runs, checkpoints, after, stop: outcome }
}

function completed(outcome: RunOutcome) {
  if (outcome.status !== 'completed') throw new Error(`expected a completed run, got ${outcome.status}: ${JSON.stringify(outcome)}`)
  return outcome
}

function stopped(outcome: RunOutcome) {
  if (outcome.status !== 'stopped') throw new Error(`expected a stopped run, got ${outcome.status}`)
  return outcome
}

/** Edits the checkpoint of run r1 as a store holding it could. */
async function editCheckpoint(checkpoints: CheckpointStore, edit: (policyState: Record<string, Json>) => void) {
  const snapshot = await checkpoints.load('r1')
  if (snapshot === undefined) throw new Error('no checkpoint')
  const copy = JSON.parse(JSON.stringify(snapshot))
  edit(copy.state[POLICY_STATE_KEY])
  await checkpoints.save(copy)
}

describe('approve, change the policy, resume: the approval is checked against the policy in force', () => {
  it('unchanged policy (a new process, the same rules): the approval stands and the call runs once', async () => {
    const { runs, after } = await stoppedUnder([bigTransfer])
    const agent = after([policy({ rules: [{ ...bigTransfer }] })])
    const done = completed(await agent.resume('r1', { approvals: { call_9: 'approve' } }))
    expect(done.output).toBe('the model read: sent 50000 to bob')
    expect(runs.transfer).toBe(1)
    // Resumed twice with the same answer: the run is over, nothing runs again.
    completed(await agent.resume('r1', { approvals: { call_9: 'approve' } }))
    expect(runs.transfer).toBe(1)
  })

  it('the same rule written another way (keys reordered, one tool without a list, an unrelated rule inserted before an unnamed rule): it stands', async () => {
    const unnamed = { action: 'approve' as const, tools: 'transfer', reason: 'transfers need a person' }
    const { runs, after } = await stoppedUnder([unnamed])
    const rewritten = { reason: 'transfers need a person', tools: ['transfer'], action: 'approve' as const }
    // Its generated id moves from rule-1 to rule-2; the rule as configured is the same.
    const agent = after([policy({ rules: [{ action: 'allow', tools: 'read_file' }, rewritten] })])
    completed(await agent.resume('r1', { approvals: { call_9: 'approve' } }))
    expect(runs.transfer).toBe(1)

    // Tools and effects are sets: listed in another order, or one twice, the rule is the same.
    const listed = {
      id: 'money',
      action: 'approve' as const,
      tools: ['transfer', 'refund'],
      effect: ['write' as const, 'idempotent' as const],
    }
    const second = await stoppedUnder([listed])
    const reordered = { ...listed, tools: ['refund', 'transfer', 'refund'], effect: ['idempotent' as const, 'write' as const] }
    completed(await second.after([policy({ rules: [reordered] })]).resume('r1', { approvals: { call_9: 'approve' } }))
    expect(second.runs.transfer).toBe(1)
  })

  it('a rule now denies the call: refused as blocked_by_policy, saying the policy changed and naming both rules; the tool never runs', async () => {
    const { runs, after } = await stoppedUnder([bigTransfer])
    const deny = { id: 'no-transfers', action: 'deny' as const, tools: 'transfer', reason: 'transfers are frozen' }
    const done = completed(await after([policy({ rules: [deny, bigTransfer] })]).resume('r1', { approvals: { call_9: 'approve' } }))
    expect(done.output).toContain('"error":"blocked_by_policy"')
    expect(done.output).toContain(
      "call to 'transfer' blocked by policy: transfers are frozen (the policy changed since this call was approved under rule big-transfer: rule no-transfers now denies it)",
    )
    expect(runs.transfer).toBe(0)
  })

  it("the approving rule removed and default: 'deny': refused, saying no rule allows it now", async () => {
    const { runs, after } = await stoppedUnder([bigTransfer])
    const done = completed(
      await after([policy({ rules: [], default: 'deny' })]).resume('r1', { approvals: { call_9: { args: pay('x').args } } }),
    )
    expect(done.output).toContain(
      'no rule allows it (the policy changed since this call was approved under rule big-transfer: no rule allows it now)',
    )
    expect(runs.transfer).toBe(0)
  })

  it('the rule that asked was edited: nothing runs, the run asks again saying why; the old answer is spent, a fresh one runs the call once', async () => {
    const { runs, after, checkpoints } = await stoppedUnder([bigTransfer])
    const stricter = { ...bigTransfer, args: [{ arg: 'amountCents', gt: 20_000 }] }
    const agent = after([policy({ rules: [stricter] })])
    const asked = stopped(await agent.resume('r1', { approvals: { call_9: 'approve' } }))
    expect(asked.error.kind).toBe('user_input_required')
    expect(asked.report.pending).toEqual([
      {
        callId: 'call_9',
        tool: 'transfer',
        arguments: '{"amountCents":50000,"to":"bob"}',
        reason: 'transfers over $100 need a person; asked again: the policy changed since it was approved (rule big-transfer was changed)',
      },
    ])
    expect(asked.error.message).toContain('asked again: the policy changed since it was approved (rule big-transfer was changed)')
    expect((asked.error.details.pending as Array<{ problem?: string }>)[0]?.problem).toBe(
      'the policy changed since this call was approved (rule big-transfer was changed), so the approval does not stand; answer this call again',
    )
    expect(runs.transfer).toBe(0)
    // The checkpoint no longer holds the old answer: a resume without one asks again, it does not run.
    const saved = (await checkpoints.load('r1'))?.state[POLICY_STATE_KEY] as { approvals?: object } | undefined
    expect(saved?.approvals).toEqual({})
    stopped(await agent.resume('r1'))
    expect(runs.transfer).toBe(0)
    // Answered under the rule as it is now: it stands, once.
    const done = completed(await agent.resume('r1', { approvals: { call_9: 'approve' } }))
    expect(done.output).toBe('the model read: sent 50000 to bob')
    completed(await agent.resume('r1', { approvals: { call_9: 'approve' } }))
    expect(runs.transfer).toBe(1)
  })

  it("another rule asks now: asked again, naming both; a rule's reason or a renamed id counts as a change", async () => {
    const { runs, after } = await stoppedUnder([bigTransfer])
    const allWrites = { id: 'all-writes', action: 'approve' as const, effect: 'write' as const, reason: 'every write needs a person' }
    const first = stopped(await after([policy({ rules: [allWrites, bigTransfer] })]).resume('r1', { approvals: { call_9: 'approve' } }))
    expect(first.report.pending[0]?.reason).toBe(
      'every write needs a person; asked again: the policy changed since it was approved (rule all-writes now asks for approval instead of rule big-transfer)',
    )
    for (const edited of [
      { ...bigTransfer, reason: 'ask finance' },
      { ...bigTransfer, id: 'large-transfer' },
    ]) {
      const again = await stoppedUnder([bigTransfer])
      const outcome = stopped(await again.after([policy({ rules: [edited] })]).resume('r1', { approvals: { call_9: 'approve' } }))
      expect(outcome.report.pending[0]?.reason).toContain('asked again: the policy changed since it was approved')
      expect(again.runs.transfer).toBe(0)
    }
    expect(runs.transfer).toBe(0)
  })

  it('a `when` check counts by its source: the same source stands, another asks again', async () => {
    const when = (args: unknown) => (args as { to: string }).to === 'bob'
    const rule = { id: 'to-bob', action: 'approve' as const, tools: 'transfer', when }
    const same = await stoppedUnder([rule])
    completed(
      await same
        .after([policy({ rules: [{ ...rule, when: (args: unknown) => (args as { to: string }).to === 'bob' }] })])
        .resume('r1', { approvals: { call_9: 'approve' } }),
    )
    expect(same.runs.transfer).toBe(1)
    const other = await stoppedUnder([rule])
    const changed = { ...rule, when: (args: unknown) => (args as { to: string }).to !== 'alice' }
    stopped(await other.after([policy({ rules: [changed] })]).resume('r1', { approvals: { call_9: 'approve' } }))
    expect(other.runs.transfer).toBe(0)
  })

  it('parallel calls in one turn: the one whose rule is unchanged runs once, the one whose rule changed is asked again', async () => {
    const { runs, after } = await stoppedUnder([bigTransfer, deletes], [pay('a'), removeUser('d')])
    const agent = after([policy({ rules: [bigTransfer, { ...deletes, reason: 'deleting a user needs two people' }] })])
    const again = stopped(await agent.resume('r1', { approvals: { a: 'approve', d: 'approve' } }))
    expect(again.report.pending.map((p) => [p.callId, p.reason])).toEqual([
      ['d', 'deleting a user needs two people; asked again: the policy changed since it was approved (rule deletes was changed)'],
    ])
    expect(runs).toMatchObject({ transfer: 1, delete_user: 0 })
    const done = completed(await agent.resume('r1', { approvals: { d: 'approve' } }))
    expect(done.output).toBe('the model read: sent 50000 to bob | deleted')
    expect(runs).toMatchObject({ transfer: 1, delete_user: 1 })
  })

  it('a policy that no longer asks (rule removed, default allow) or no policy at all: the call runs, as any call it allows (decision 600)', async () => {
    for (const middleware of [[policy({ rules: [] })], []]) {
      const { runs, after } = await stoppedUnder([bigTransfer])
      completed(await after(middleware).resume('r1', { approvals: { call_9: 'approve' } }))
      expect(runs.transfer).toBe(1)
    }
  })

  it('with onApproval now configured, an outdated answer is put to it afresh instead of stopping', async () => {
    const { runs, after } = await stoppedUnder([bigTransfer])
    const asked: string[] = []
    const onApproval = (request: { reason: string }) => {
      asked.push(request.reason)
      return 'deny' as const
    }
    const done = completed(
      await after([policy({ rules: [{ ...bigTransfer, reason: 'ask twice' }], onApproval })]).resume('r1', {
        approvals: { call_9: 'approve' },
      }),
    )
    expect(asked).toEqual(['ask twice; asked again: the policy changed since it was approved (rule big-transfer was changed)'])
    expect(done.output).toContain('denied_by_user')
    expect(runs.transfer).toBe(0)
  })
})

describe('approvals re-checked on resume: hostile checkpoints and answers', () => {
  it('a record of the asking rule planted or corrupted in the checkpoint makes the approval not stand; nothing runs', async () => {
    const plants: Array<[(record: Record<string, Json>) => Json, string]> = [
      [(record) => ({ ...record, fingerprint: 'f'.repeat(32) }), '(rule big-transfer was changed)'],
      [
        (record) => ({ ...record, rule: 'other', fingerprint: 'f'.repeat(32) }),
        '(rule big-transfer now asks for approval instead of rule other)',
      ],
      [(record) => ({ ...record, fingerprint: 42 }), '(the record of the rule it was approved under cannot be read)'],
      [(record) => ({ ...record, rule: `x\n${'y'.repeat(100_000)}` }), '(the record of the rule it was approved under cannot be read)'],
      [() => 'approve', '(the record of the rule it was approved under cannot be read)'],
    ]
    for (const [plant, why] of plants) {
      const { runs, after, checkpoints } = await stoppedUnder([bigTransfer])
      await editCheckpoint(checkpoints, (state) => {
        const asked = state.asked as Record<string, Json>
        asked.call_9 = plant(asked.call_9 as Record<string, Json>)
      })
      const outcome = stopped(await after([policy({ rules: [bigTransfer] })]).resume('r1', { approvals: { call_9: 'approve' } }))
      expect(outcome.report.pending[0]?.reason).toContain(`asked again: the policy changed since it was approved ${why}`)
      expect(runs.transfer).toBe(0)
    }
  })

  it('__proto__ as the call id: the record is data, an edited rule asks again, nothing is polluted', async () => {
    const { runs, after, checkpoints } = await stoppedUnder([bigTransfer], [pay('__proto__')])
    const state = (await checkpoints.load('r1'))?.state[POLICY_STATE_KEY] as { asked: object }
    expect(Object.hasOwn(state.asked, '__proto__')).toBe(true)
    const approvals = JSON.parse('{"__proto__":"approve"}') as Record<string, 'approve'>
    const outcome = stopped(await after([policy({ rules: [{ ...bigTransfer, reason: 'changed' }] })]).resume('r1', { approvals }))
    expect(outcome.report.pending.map((p) => p.callId)).toEqual(['__proto__'])
    expect(({} as Record<string, unknown>).fingerprint).toBeUndefined()
    expect(runs.transfer).toBe(0)
  })

  it('a garbage answer in the checkpoint is no approval: a rule that now denies says nothing of one', async () => {
    const { runs, after, checkpoints } = await stoppedUnder([bigTransfer])
    await editCheckpoint(checkpoints, (state) => {
      const { turn, tool, digest } = (state.asked as Record<string, Record<string, Json>>).call_9 as Record<string, Json>
      state.approvals = { call_9: { answer: 'yes please', turn, tool, digest } as Json }
    })
    const deny = { id: 'no-transfers', action: 'deny' as const, tools: 'transfer', reason: 'transfers are frozen' }
    const done = completed(await after([policy({ rules: [deny] })]).resume('r1'))
    expect(done.output).toContain("call to 'transfer' blocked by policy: transfers are frozen")
    expect(done.output).not.toContain('approved')
    expect(runs.transfer).toBe(0)
  })

  it('an answer bound to another call (other arguments) approves nothing, whatever the policy says', async () => {
    const { runs, after, checkpoints } = await stoppedUnder([bigTransfer])
    await editCheckpoint(checkpoints, (state) => {
      const digest = (state.asked as Record<string, { digest: string }>).call_9?.digest as string
      state.approvals = {
        call_9: { answer: 'approve', turn: 1, tool: 'transfer', digest: digest.replace(/^./, (c) => (c === '0' ? '1' : '0')) },
      }
    })
    const outcome = stopped(await after([policy({ rules: [bigTransfer] })]).resume('r1'))
    expect(outcome.report.pending.map((p) => p.callId)).toEqual(['call_9'])
    expect(runs.transfer).toBe(0)
  })

  it('an approval planted beside the record, bound to the call, stands only while the rule that asked is unchanged', async () => {
    const { runs, after, checkpoints } = await stoppedUnder([bigTransfer])
    await editCheckpoint(checkpoints, (state) => {
      const { turn, tool, digest } = (state.asked as Record<string, Record<string, Json>>).call_9 as Record<string, Json>
      state.approvals = { call_9: { answer: 'approve', turn, tool, digest } as Json }
    })
    stopped(await after([policy({ rules: [{ ...bigTransfer, reason: 'changed' }] })]).resume('r1'))
    expect(runs.transfer).toBe(0)
  })
})
