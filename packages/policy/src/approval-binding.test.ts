import { type CheckpointStore, createAgent, memoryCheckpoints, type RunOutcome, type RunSnapshot } from '@shallot/agent'
import { createRun, createStack, defineTool, type Json, LoopError, type ToolCall } from '@shallot/core'
import { putApproval } from '@shallot/core/kit'
import { scriptedModel } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { POLICY_STATE_KEY, policy } from './index.js'

const rules = [{ id: 'transfers', action: 'approve' as const, tools: 'transfer', reason: 'transfers need a person' }]
const bob: ToolCall = { id: 'call_1', name: 'transfer', args: { to: 'bob', amountCents: 50_000 } }
const mallory: ToolCall = { id: 'call_1', name: 'transfer', args: { to: 'mallory', amountCents: 900_000 } }

/** A transfer tool that records every transfer it really made. */
function ledger() {
  const sent: string[] = []
  const transfer = defineTool({
    name: 'transfer',
    description: 'Move money.',
    input: z.object({ to: z.string(), amountCents: z.number() }),
    effect: 'write',
    execute: ({ to, amountCents }) => {
      sent.push(`${amountCents} to ${to}`)
      return `sent ${amountCents} to ${to}`
    },
  })
  return { sent, transfer }
}

/**
 * An agent whose model asks for bob's transfer as call_1 in its first turn and, asked again, for
 * mallory's under the same id; then it answers with what it read.
 */
function agentOn(checkpoints: CheckpointStore, calls: readonly ToolCall[] = [bob, mallory]) {
  const sent = ledger()
  const model = scriptedModel(
    [...calls.map((call) => ({ toolCalls: [call] })), ({ lastResults }) => ({ text: `read: ${lastResults[0]?.content}` })],
    { onEnd: 'repeat' },
  )
  const agent = createAgent({ model, tools: [sent.transfer], checkpoints, middleware: [policy({ rules })] })
  return { agent, model, ...sent }
}

function stopped(outcome: RunOutcome) {
  if (outcome.status !== 'stopped') throw new Error(`expected a stopped run, got ${outcome.status}`)
  return outcome
}

const approvalsIn = (snapshot: RunSnapshot | undefined) =>
  (snapshot?.state[POLICY_STATE_KEY] as { approvals?: Record<string, Json> } | undefined)?.approvals ?? {}

describe('an approval binds to the call it approves, not to its id', () => {
  it('a resume cancelled before it dispatches drops the answer with the stopped turn; the model reusing the id for another call is asked about anew', async () => {
    const checkpoints = memoryCheckpoints()
    const { agent, sent } = agentOn(checkpoints)
    stopped(await agent.run({ input: 'pay bob', runId: 'r1' }))
    const cancelled = stopped(await agent.resume('r1', { approvals: { call_1: 'approve' }, signal: AbortSignal.abort() }))
    expect(cancelled.error.kind).toBe('cancelled')
    const snapshot = await checkpoints.load('r1')
    // The answer and the turn it answered go together: both kept, or both dropped.
    expect(snapshot?.pendingTurn).toBeUndefined()
    expect(Object.keys(approvalsIn(snapshot))).toEqual([])

    const again = stopped(await agent.resume('r1'))
    expect(again.error.kind).toBe('user_input_required')
    expect(again.report.pending).toEqual([
      expect.objectContaining({ callId: 'call_1', arguments: '{"amountCents":900000,"to":"mallory"}' }),
    ])
    expect(sent).toEqual([])
  })

  it("an answer left in the checkpoint without its turn (a planted or older checkpoint) never authorises the model's new call with that id", async () => {
    const checkpoints = memoryCheckpoints()
    const { agent, sent } = agentOn(checkpoints)
    stopped(await agent.run({ input: 'pay bob', runId: 'r1' }))
    // The answered checkpoint as resume saves it, then the stopped turn dropped and the answer kept.
    const saves: RunSnapshot[] = []
    const save = checkpoints.save.bind(checkpoints)
    checkpoints.save = (snapshot) => {
      saves.push(JSON.parse(JSON.stringify(snapshot)))
      return save(snapshot)
    }
    await agent.resume('r1', { approvals: { call_1: 'approve' }, signal: AbortSignal.abort() })
    const { pendingTurn: _, ...answered } = saves[0] as RunSnapshot
    expect(Object.keys(approvalsIn(answered))).toEqual(['call_1'])
    save(answered)
    const outcome = stopped(await agent.resume('r1'))
    expect(outcome.report.pending.map((p) => p.arguments)).toEqual(['{"amountCents":900000,"to":"mallory"}'])
    expect(sent).toEqual([])
  })

  it('a crash after the answers were saved: an agent made again on the same store runs the approved call, once, and never the other', async () => {
    const checkpoints = memoryCheckpoints()
    const first = agentOn(checkpoints)
    stopped(await first.agent.run({ input: 'pay bob', runId: 'r1' }))
    // The process dies during the replay, after the answers were saved: the store holds that snapshot.
    const save = checkpoints.save.bind(checkpoints)
    let answered: RunSnapshot | undefined
    checkpoints.save = (snapshot) => {
      answered ??= JSON.parse(JSON.stringify(snapshot))
      throw new Error('the process died')
    }
    await expect(first.agent.resume('r1', { approvals: { call_1: 'approve' } })).rejects.toThrow('the process died')
    checkpoints.save = save
    save(answered as RunSnapshot)

    // The new process's model, asked after the replayed turn, reuses the id for another transfer.
    const second = agentOn(checkpoints, [mallory])
    const outcome = stopped(await second.agent.resume('r1'))
    expect(outcome.report.pending.map((p) => p.arguments)).toEqual(['{"amountCents":900000,"to":"mallory"}'])
    expect([...first.sent, ...second.sent]).toEqual(['50000 to bob'])
  })
})

describe('approvals handed to a stack bind to tool and arguments too', () => {
  function stack() {
    const { sent, transfer } = ledger()
    return { sent, stack: createStack({ tools: [transfer], middleware: [policy({ rules })] }) }
  }

  it("an approval of bob's transfer does not run mallory's under the same id; it stops for a person instead", async () => {
    const { stack: s, sent } = stack()
    const run = createRun()
    putApproval(run, bob, 'approve')
    const stop = await s.dispatch(mallory, { run }).catch((err: unknown) => err)
    expect(stop).toSatisfy(LoopError.is)
    expect((stop as LoopError).kind).toBe('user_input_required')
    expect((stop as LoopError).details.pending).toEqual([
      expect.objectContaining({ callId: 'call_1', arguments: '{"amountCents":900000,"to":"mallory"}' }),
    ])
    expect(sent).toEqual([])
    // The approved call itself still runs, once.
    expect((await s.dispatch(bob, { run })).ok).toBe(true)
    expect(sent).toEqual(['50000 to bob'])
  })

  it('an answer keyed by id alone (written into the run state by hand) approves nothing; the stop says why and how to answer', async () => {
    const { stack: s, sent } = stack()
    const run = createRun({ state: { [POLICY_STATE_KEY]: { approvals: { call_1: 'approve' } } } })
    await expect(s.dispatch(bob, { run })).rejects.toSatisfy((err: unknown) => LoopError.is(err) && err.kind === 'user_input_required')
    await expect(s.dispatch(bob, { run })).rejects.toThrow(
      'the answer the run state holds for call_1 does not count: it is bound to another turn, tool or arguments, or was written by id alone; ' +
        'answer this very call with agent.resume(runId, { approvals }) or putApproval(run, call, answer)',
    )
    expect(sent).toEqual([])
  })

  it('an approval bound to another turn does not run the same call in this one', async () => {
    const { stack: s, sent } = stack()
    const run = createRun()
    putApproval(run, bob, 'approve')
    run.turn = 2
    await expect(s.dispatch(bob, { run })).rejects.toSatisfy((err: unknown) => LoopError.is(err))
    expect(sent).toEqual([])
  })

  it('50 parallel dispatches of the approved id with different arguments: only the approved call runs, once', async () => {
    const { stack: s, sent } = stack()
    const run = createRun()
    putApproval(run, bob, 'approve')
    const calls = Array.from({ length: 50 }, (_, i) =>
      i === 17 ? bob : { id: 'call_1', name: 'transfer', args: { to: i % 2 === 0 ? 'mallory' : 'bob', amountCents: 50_001 + i } },
    )
    calls.push(bob, bob)
    const settled = await Promise.allSettled(calls.map((call) => s.dispatch(call, { run })))
    expect(sent).toEqual(['50000 to bob'])
    const ran = settled.filter((s) => s.status === 'fulfilled' && s.value.ok)
    expect(ran).toHaveLength(1)
  })
})

describe('edited arguments that cannot be read are a refusal, never a crash', () => {
  const revoked = () => {
    const { proxy, revoke } = Proxy.revocable({}, {})
    revoke()
    return proxy
  }
  const throwing = (value: Record<string, unknown> = {}) =>
    Object.defineProperty({ ...value }, 'to', {
      enumerable: true,
      get() {
        throw new Error('secret-token-123')
      },
    })

  async function answeredInProcess(answer: unknown) {
    const { sent, transfer } = ledger()
    const stack = createStack({ tools: [transfer], middleware: [policy({ rules, onApproval: () => answer as 'approve' })] })
    const result = await stack.dispatch(bob, { run: createRun() })
    return { result, sent }
  }

  it.each([
    ['a revoked Proxy as the answer', () => revoked()],
    [
      'an answer whose args getter throws',
      () =>
        Object.defineProperty({}, 'args', {
          enumerable: true,
          get: () => {
            throw new Error('boom')
          },
        }),
    ],
  ])('%s is denied (denied_by_user), and the tool never runs', async (_name, make) => {
    const { result, sent } = await answeredInProcess(make())
    expect(result.error?.code).toBe('denied_by_user')
    expect(sent).toEqual([])
  })

  it.each([
    ['a revoked Proxy', () => revoked(), 'cannot be read'],
    ['a getter that throws', () => throwing({ amountCents: 1 }), 'cannot be read'],
    ['a string of 300,000 characters', () => ({ to: 'x'.repeat(300_000), amountCents: 1 }), 'are over 262144 characters'],
    [
      '2,000 strings of 200 characters',
      () => ({ to: 'bob', amountCents: 1, memo: Array.from({ length: 2_000 }, () => 'y'.repeat(200)) }),
      'are over 262144 characters',
    ],
  ])('edited arguments holding %s are invalid_arguments, soft; nothing ran and nothing thrown leaks', async (_name, make, problem) => {
    const { result, sent } = await answeredInProcess({ args: make() })
    expect(result.error?.code).toBe('invalid_arguments')
    expect(result.content).toContain(`the edited arguments are refused: they ${problem}`)
    expect(result.content).not.toContain('secret-token-123')
    expect(sent).toEqual([])
  })

  it('arguments are read once: a getter answering bob to the check cannot answer mallory to the tool', async () => {
    let reads = 0
    const shifty = Object.defineProperty({ amountCents: 50_000 }, 'to', {
      enumerable: true,
      get: () => (reads++ === 0 ? 'bob' : 'mallory'),
    })
    const { result, sent } = await answeredInProcess({ args: shifty })
    expect(result.ok).toBe(true)
    expect(sent).toEqual(['50000 to bob'])
    expect(reads).toBe(1)
  })

  it('agent.resume with edited arguments that cannot be read is an OptionsError, and the checkpoint is untouched', async () => {
    const checkpoints = memoryCheckpoints()
    const { agent, sent } = agentOn(checkpoints)
    stopped(await agent.run({ input: 'pay bob', runId: 'r1' }))
    const before = JSON.stringify(await checkpoints.load('r1'))
    for (const args of [revoked(), throwing({ amountCents: 1 }), { to: 'x'.repeat(300_000), amountCents: 1 }]) {
      await expect(agent.resume('r1', { approvals: { call_1: { args: args as Json } } })).rejects.toThrow(
        'agent.resume(): approvals["call_1"]',
      )
    }
    await expect(agent.resume('r1', { approvals: revoked() as never })).rejects.toThrow('agent.resume()')
    expect(JSON.stringify(await checkpoints.load('r1'))).toBe(before)
    expect(sent).toEqual([])
  })
})

describe('cancel at every await of a resume with approvals', () => {
  /** A store and a tool that cancel the resume at their `at`-th step (claim, load, each save, the transfer). */
  function cancelling(at: number) {
    const inner = memoryCheckpoints()
    const controller = new AbortController()
    const steps: string[] = []
    let armed = false
    const step = async (name: string) => {
      if (!armed) return
      steps.push(name)
      if (steps.length === at) controller.abort(new Error(`cancelled at ${name}`))
      await Promise.resolve()
    }
    const checkpoints: CheckpointStore = {
      async save(snapshot) {
        await step('save')
        inner.save(snapshot)
      },
      async load(runId) {
        await step('load')
        return inner.load(runId)
      },
      async claim() {
        await step('claim')
        return () => {}
      },
    }
    return { checkpoints, inner, controller, steps, arm: () => (armed = true) }
  }

  it('whichever await the cancel lands on, the checkpoint holds the answers only with the turn they answer, and only bob is ever paid', async () => {
    for (let at = 1; ; at++) {
      const store = cancelling(at)
      const first = agentOn(store.checkpoints)
      stopped(await first.agent.run({ input: 'pay bob', runId: 'r1' }))
      store.arm()
      await first.agent.resume('r1', { approvals: { call_1: 'approve' }, signal: store.controller.signal })
      const during = [...store.steps]
      const snapshot = store.inner.load('r1') as RunSnapshot
      const answers = approvalsIn(snapshot)
      if (snapshot.pendingTurn === undefined) expect(Object.keys(answers)).toEqual([])
      else for (const record of Object.values(answers)) expect(record).toMatchObject({ turn: snapshot.pendingTurn.turn, tool: 'transfer' })

      // Whatever was left, a model that now reuses the id for mallory is never paid without a new answer.
      const next = agentOn(store.checkpoints, [mallory])
      await next.agent.resume('r1')
      expect([...first.sent, ...next.sent].filter((s) => s.includes('mallory'))).toEqual([])
      expect([...first.sent, ...next.sent].filter((s) => s.includes('bob')).length).toBeLessThanOrEqual(1)
      if (!store.controller.signal.aborted) {
        // Every step was tried: the hold's claim, the load, the answers' save, the replayed turn's save, the stop on mallory's call.
        expect(during).toEqual(['claim', 'load', 'save', 'save', 'save'])
        break
      }
    }
  })
})
