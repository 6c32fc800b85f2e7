import { createAgent, memoryCheckpoints, ResumeError, type RunOutcome, type RunSnapshot } from '@shallot/agent'
import { defineTool } from '@shallot/core'
import { scriptedModel } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { policy } from './index.js'
import { countedTools } from './test-tools.js'

const rules = [{ id: 'transfers', action: 'approve' as const, tools: 'transfer', reason: 'transfers need a person' }]
const pay = (id: string) => ({ id, name: 'transfer', args: { to: 'bob', amountCents: 50_000 } })

function completed(outcome: RunOutcome) {
  if (outcome.status !== 'completed') throw new Error(`expected a completed run, got ${outcome.status}: ${outcome.report.text}`)
  return outcome
}

/** A stopped run r1 waiting for call_9 (and read r, settled), in a memory store. */
async function stoppedRun() {
  const { runs, tools } = countedTools()
  const model = scriptedModel(
    [
      { toolCalls: [pay('call_9'), { id: 'r', name: 'read_file', args: { path: 'a.txt' } }] },
      ({ lastResults }) => ({ text: `read: ${lastResults.map((r) => r.content).join(' | ')}` }),
    ],
    { onEnd: 'repeat' },
  )
  const checkpoints = memoryCheckpoints()
  const agent = createAgent({ model, tools, checkpoints, middleware: [policy({ rules })] })
  await agent.run({ input: 'pay bob', runId: 'r1' })
  const snapshot = (await checkpoints.load('r1')) as RunSnapshot
  expect(snapshot.pendingTurn?.pending).toHaveLength(1)
  return { runs, model, checkpoints, agent, snapshot }
}

describe('agent.resume(): a malformed pendingTurn in a checkpoint is refused before anything runs', () => {
  const corruptions: Array<[string, (turn: Record<string, unknown>) => unknown, string]> = [
    ['not an object', () => 'yes', 'pendingTurn is not an object'],
    ['null', () => null, 'pendingTurn is not an object'],
    ['a turn as a string', (t) => ({ ...t, turn: '1' }), 'pendingTurn.turn is not a turn number'],
    ['a NaN turn', (t) => ({ ...t, turn: Number.NaN }), 'pendingTurn.turn is not a turn number'],
    ['toolCalls not a list', (t) => ({ ...t, response: { toolCalls: { 0: pay('call_9') } } }), 'toolCalls is not a list of calls'],
    ['a call without an id', (t) => ({ ...t, response: { toolCalls: [{ name: 'transfer', args: {} }] } }), 'toolCalls[0] is not a call'],
    ['a call id that is a number', (t) => ({ ...t, response: { toolCalls: [{ id: 9, name: 'transfer', args: {} }] } }), 'toolCalls[0]'],
    ['the same call id twice', (t) => ({ ...t, response: { toolCalls: [pay('call_9'), pay('call_9')] } }), 'the call id "call_9" twice'],
    [
      'a huge list of calls',
      (t) => ({ ...t, response: { toolCalls: Array.from({ length: 100_000 }, (_, i) => pay(`c${i}`)) } }),
      'holds 100000 calls; a turn has at most 1000',
    ],
    ['pending without a callId', (t) => ({ ...t, pending: [{ tool: 'transfer' }] }), 'pendingTurn.pending[0] has no callId'],
    ['pending empty', (t) => ({ ...t, pending: [] }), 'pendingTurn.pending is not a list of waiting calls'],
    [
      'pending naming a call the turn lacks',
      (t) => ({ ...t, pending: [{ callId: 'call_77' }] }),
      'waits for call "call_77", which the turn does not hold',
    ],
    [
      'a waiting call of a tool the agent lacks',
      (t) => ({ ...t, response: { toolCalls: [{ ...pay('call_9'), name: 'wire_money' }] }, results: {} }),
      'the waiting call "call_9" names the tool "wire_money", which this agent does not have',
    ],
    ['results as a list', (t) => ({ ...t, results: [] }), 'pendingTurn.results is not an object'],
    [
      'a result of another call',
      (t) => ({ ...t, results: { ghost: { callId: 'ghost' } } }),
      'holds call "ghost", which the turn does not hold',
    ],
    [
      'a result of the wrong shape',
      (t) => ({ ...t, results: { r: { callId: 'r', ok: 'yes' } } }),
      'pendingTurn.results["r"] is not a settled call',
    ],
    ['an unknown field', (t) => ({ ...t, extra: 1 }), 'pendingTurn has an unknown field "extra"'],
  ]

  it.each(corruptions)('%s: ResumeError corrupt_checkpoint naming the run, the problem and the fix', async (_name, corrupt, problem) => {
    const { agent, checkpoints, snapshot, runs, model } = await stoppedRun()
    const pendingTurn = corrupt(JSON.parse(JSON.stringify(snapshot.pendingTurn)))
    checkpoints.save({ ...snapshot, pendingTurn } as unknown as RunSnapshot)
    const attempt = agent.resume('r1', { approvals: { call_9: 'approve' } })
    await expect(attempt).rejects.toSatisfy(
      (err: unknown) => ResumeError.is(err) && err.code === 'corrupt_checkpoint' && err.runId === 'r1',
    )
    await expect(attempt).rejects.toThrow('agent.resume(): the checkpoint of run "r1" cannot be resumed: ')
    await expect(attempt).rejects.toThrow(problem)
    await expect(attempt).rejects.toThrow('Nothing ran. Resume it with the tools it was stopped with, or restore the checkpoint')
    // Refused without approvals too: the check is of the checkpoint, not of the answers.
    await expect(agent.resume('r1')).rejects.toSatisfy(ResumeError.is)
    expect(runs).toMatchObject({ transfer: 0, read_file: 1 })
    expect(model.requests).toHaveLength(1)
  })

  it('__proto__ keys in a checkpoint read from JSON are unknown fields, and pollute nothing', async () => {
    const { agent, checkpoints, snapshot, runs } = await stoppedRun()
    const text = JSON.stringify(snapshot).replace('"pendingTurn":{', '"pendingTurn":{"__proto__":{"polluted":true},')
    checkpoints.save(JSON.parse(text))
    await expect(agent.resume('r1', { approvals: { call_9: 'approve' } })).rejects.toThrow('pendingTurn has an unknown field "__proto__"')
    const inResponse = JSON.stringify(snapshot).replace('"response":{', '"response":{"__proto__":{"toolCalls":[]},')
    checkpoints.save(JSON.parse(inResponse))
    await expect(agent.resume('r1')).rejects.toThrow('pendingTurn.response has an unknown field "__proto__"')
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
    expect(runs.transfer).toBe(0)
  })

  it('a well-formed pendingTurn still resumes: the approved call runs once', async () => {
    const { agent, runs } = await stoppedRun()
    const outcome = completed(await agent.resume('r1', { approvals: { call_9: 'approve' } }))
    expect(outcome.output).toBe('read: sent 50000 to bob | contents of a.txt')
    expect(runs).toMatchObject({ transfer: 1, read_file: 1 })
  })
})

/** A transfer that waits until the test lets it finish: a resume stays in flight as long as the test wants. */
function slowTransfer() {
  let runs = 0
  let finish: () => void = () => {}
  let started: () => void = () => {}
  const running = new Promise<void>((resolve) => {
    started = resolve
  })
  const gate = new Promise<void>((resolve) => {
    finish = resolve
  })
  const tool = defineTool({
    name: 'transfer',
    description: 'Move money.',
    input: z.object({ to: z.string(), amountCents: z.number() }),
    effect: 'write',
    execute: async ({ to, amountCents }) => {
      runs++
      started()
      await gate
      return `sent ${amountCents} to ${to}`
    },
  })
  return { tool, running, finish, runs: () => runs }
}

describe('two resumes of one run at once: one proceeds, the other is refused with run_in_progress', () => {
  const model = () =>
    scriptedModel([{ toolCalls: [pay('call_9')] }, ({ lastResults }) => ({ text: `read: ${lastResults[0]?.content}` })], {
      onEnd: 'repeat',
    })

  it('in one agent: the second resume rejects at once, the first runs the tool once, a later resume sees the outcome', async () => {
    const slow = slowTransfer()
    const checkpoints = memoryCheckpoints()
    const agent = createAgent({ model: model(), tools: [slow.tool], checkpoints, middleware: [policy({ rules })] })
    await agent.run({ input: 'pay bob', runId: 'r1' })
    const first = agent.resume('r1', { approvals: { call_9: 'approve' } })
    await slow.running
    const second = agent.resume('r1', { approvals: { call_9: 'deny' } })
    await expect(second).rejects.toSatisfy((err: unknown) => ResumeError.is(err) && err.code === 'run_in_progress')
    await expect(second).rejects.toThrow('agent.resume(): run "r1" is being driven by another run() or resume() right now; nothing ran')
    slow.finish()
    expect(completed(await first).output).toBe('read: sent 50000 to bob')
    // The refused resume changed nothing: its 'deny' was never written.
    expect(JSON.stringify((await checkpoints.load('r1'))?.state)).not.toContain('deny')
    expect(completed(await agent.resume('r1', { approvals: { call_9: 'approve' } })).output).toBe('read: sent 50000 to bob')
    expect(slow.runs()).toBe(1)
  })

  it('in two agents on one store, and against the run() that is still going', async () => {
    const slow = slowTransfer()
    const checkpoints = memoryCheckpoints()
    const options = { model: model(), tools: [slow.tool], checkpoints, middleware: [policy({ rules: [] })] }
    const a = createAgent(options)
    const b = createAgent(options)
    const running = a.run({ input: 'pay bob', runId: 'r1' })
    await slow.running
    await expect(b.resume('r1')).rejects.toSatisfy((err: unknown) => ResumeError.is(err) && err.code === 'run_in_progress')
    await expect(a.run({ input: 'pay bob again', runId: 'r1' })).rejects.toThrow('agent.run(): run "r1" is being driven')
    slow.finish()
    expect(completed(await running).output).toBe('read: sent 50000 to bob')
    expect(completed(await b.resume('r1')).output).toBe('read: sent 50000 to bob')
    expect(slow.runs()).toBe(1)
  })

  it("a store's claim keeps resumes apart across agents that share no process state; a refused claim runs nothing", async () => {
    const slow = slowTransfer()
    const inner = memoryCheckpoints()
    const holders = new Set<string>()
    const released: string[] = []
    // What a shared store does across processes: one holder per run id, given back on release.
    const shared = () => ({
      save: inner.save,
      load: inner.load,
      claim(runId: string) {
        if (holders.has(runId)) return undefined
        holders.add(runId)
        return () => {
          holders.delete(runId)
          released.push(runId)
        }
      },
    })
    const a = createAgent({ model: model(), tools: [slow.tool], checkpoints: shared(), middleware: [policy({ rules })] })
    const b = createAgent({ model: model(), tools: [slow.tool], checkpoints: shared(), middleware: [policy({ rules })] })
    await a.run({ input: 'pay bob', runId: 'r1' })
    const first = a.resume('r1', { approvals: { call_9: 'approve' } })
    await slow.running
    await expect(b.resume('r1', { approvals: { call_9: 'approve' } })).rejects.toSatisfy(
      (err: unknown) => ResumeError.is(err) && err.code === 'run_in_progress',
    )
    slow.finish()
    completed(await first)
    expect(slow.runs()).toBe(1)
    expect(holders.size).toBe(0)
    expect(released).toEqual(['r1', 'r1'])
    // A claim that throws (the store is down) is the resume's error, and leaves nothing held.
    const broken = createAgent({
      model: model(),
      tools: [slow.tool],
      checkpoints: { ...shared(), claim: () => Promise.reject(new Error('store unreachable')) },
    })
    await expect(broken.resume('r1')).rejects.toThrow('store unreachable')
    expect(completed(await a.resume('r1')).output).toBe('read: sent 50000 to bob')
  })

  it('a claim that cannot be given back is logged, and the outcome is still returned', async () => {
    const inner = memoryCheckpoints()
    const errors: string[] = []
    const logger = {
      debug: () => {},
      info: () => {},
      warn: () => {},
      error: (_: object, msg?: string) => errors.push(String(msg)),
      child: () => logger,
    }
    const checkpoints = { save: inner.save, load: inner.load, claim: () => () => Promise.reject(new Error('store gone')) }
    const slow = slowTransfer()
    slow.finish()
    const agent = createAgent({ model: model(), tools: [slow.tool], checkpoints, logger, middleware: [policy({ rules })] })
    await agent.run({ input: 'pay bob', runId: 'r1' })
    expect(completed(await agent.resume('r1', { approvals: { call_9: 'approve' } })).output).toBe('read: sent 50000 to bob')
    expect(errors.filter((m) => m.startsWith('could not release the claim'))).toHaveLength(2)
  })
})
