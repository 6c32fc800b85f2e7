import { type CheckpointStore, createAgent, type RunSnapshot } from '@shallot/agent'
import { defineTool, LoopError } from '@shallot/core'
import { scriptedModel } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { usePostgres } from './test-support/postgres-fixture.js'
import { spyLogger } from './test-support/spy-logger.js'

const pg = usePostgres()

function files(contents: Record<string, string>) {
  let reads = 0
  const readFile = defineTool({
    name: 'read_file',
    description: 'Read a file',
    input: z.object({ path: z.string() }),
    effect: 'read',
    execute: ({ path }) => {
      reads++
      return contents[path] ?? ''
    },
  })
  return { readFile, reads: () => reads }
}

const script = [{ toolCalls: [{ name: 'read_file', args: { path: 'a' } }] }, { toolCalls: [{ name: 'read_file', args: { path: 'b' } }] }]

/** Runs two turns, then the model dies for good: a stopped run with two committed turns. */
async function crashedRun(checkpoints: CheckpointStore, runId: string) {
  const { readFile, reads } = files({ a: 'A', b: 'B' })
  const crashing = scriptedModel([...script, () => Promise.reject(new Error('process killed'))])
  const first = await createAgent({ model: crashing, tools: [readFile], checkpoints }).run({ input: 'read a and b', runId })
  expect(first).toMatchObject({ status: 'stopped', turns: 2 })
  return { readFile, reads }
}

const healthy = () => scriptedModel([({ messages }) => ({ text: `seen ${messages.filter((m) => m.role === 'tool').length} results` })])

describe('postgres checkpoints', () => {
  it('resumes a run in a new agent (a new worker) after a server crash, without re-running completed calls', async () => {
    const { checkpoints } = await pg.stores()
    const { readFile, reads } = await crashedRun(checkpoints, 'run-1')
    await pg.server.stop('immediate')
    await pg.server.start()
    const resumed = await createAgent({ model: healthy(), tools: [readFile], checkpoints }).resume('run-1')
    expect(resumed).toMatchObject({ status: 'completed', output: 'seen 2 results', turns: 3 })
    expect(reads()).toBe(2)
    expect(await checkpoints.load('run-1')).toMatchObject({ status: 'completed', output: 'seen 2 results' })
  }, 60_000)

  it('answers undefined for a run it never saw, and forgets a run on remove()', async () => {
    const { checkpoints } = await pg.stores()
    expect(await checkpoints.load('nobody')).toBeUndefined()
    await crashedRun(checkpoints, 'run-2')
    expect(await checkpoints.remove('run-2')).toBe(true)
    expect(await checkpoints.remove('run-2')).toBe(false)
    expect(await checkpoints.load('run-2')).toBeUndefined()
  })

  it('keeps strings a jsonb column would refuse or change (NUL, lone surrogates) exactly', async () => {
    const { checkpoints } = await pg.stores()
    const snapshot: RunSnapshot = {
      version: 1,
      runId: 'odd',
      input: 'a\u0000b \ud800 👩‍💻',
      status: 'running',
      turn: 0,
      stepsUsed: 0,
      state: { z: 1, a: { nested: [null, true] } },
      transcript: [{ role: 'user', content: 'a\u0000b' }],
      turns: [],
    }
    await checkpoints.save(snapshot)
    const loaded = await checkpoints.load('odd')
    expect(loaded).toEqual(snapshot)
    expect(Object.keys(loaded?.state ?? {})).toEqual(['z', 'a'])
  })

  it('deletes checkpoints nobody saved for checkpointTtlMs on sweep()', async () => {
    let now = 1_000_000
    const stores = await pg.stores({ now: () => now, checkpointTtlMs: 10_000 })
    await crashedRun(stores.checkpoints, 'old')
    now += 10_000
    await crashedRun(stores.checkpoints, 'fresh')
    expect(await stores.sweep()).toMatchObject({ checkpoints: 1 })
    expect(await stores.checkpoints.load('old')).toBeUndefined()
    expect(await stores.checkpoints.load('fresh')).toMatchObject({ runId: 'fresh' })
  })
})

describe('postgres checkpoints while the server is down', () => {
  // A save that fails in run() before the first turn is core's to answer (agent.run() should resolve stopped): not pinned here.
  it('rejects a run whose checkpoint cannot be saved after a turn, keeping the last saved turn to resume from', async () => {
    const { checkpoints } = await pg.stores()
    const { readFile, reads } = files({ a: 'A' })
    // The server goes away during the first turn: its checkpoint cannot be written, so the run stops there.
    const stopping = scriptedModel([
      async () => {
        await pg.server.stop('fast')
        return { toolCalls: [{ name: 'read_file', args: { path: 'a' } }] }
      },
      { text: 'never reached' },
    ])
    try {
      const run = createAgent({ model: stopping, tools: [readFile], checkpoints }).run({ input: 'x', runId: 'mid' })
      // A checkpoint that cannot be written rejects with a fatal LoopError naming the store, and nothing is written
      // over the last good checkpoint, so a queue's retry or a later resume continues from it (decision 375).
      await expect(run).rejects.toSatisfy(LoopError.is)
      await expect(run).rejects.toMatchObject({ kind: 'fatal', message: expect.stringContaining('checkpoints store') })
      expect(reads()).toBe(1)
    } finally {
      await pg.server.start()
    }
    expect(await checkpoints.load('mid')).toMatchObject({ status: 'running', turn: 0 })
  }, 60_000)
})

describe('postgres checkpoints: a corrupt checkpoint is refused, never resumed and never started over', () => {
  const valid = () => ({
    version: 1,
    runId: 'run-x',
    input: 'task',
    status: 'running',
    turn: 1,
    stepsUsed: 1,
    state: {},
    transcript: [{ role: 'user', content: 'task' }],
    turns: [{ turn: 1, calls: [] }],
  })
  const corrupt: Array<[string, string]> = [
    ['a JSON string', '"run-x"'],
    ['JSON null', 'null'],
    ['a number', '42'],
    ['an array', JSON.stringify([valid()])],
    ['a turn that is text', JSON.stringify({ ...valid(), turn: '1' })],
    ['a negative step count', JSON.stringify({ ...valid(), stepsUsed: -1 })],
    ['an unknown status', JSON.stringify({ ...valid(), status: 'finished' })],
    ['another version', JSON.stringify({ ...valid(), version: 2 })],
    ['a message of an unknown role', JSON.stringify({ ...valid(), transcript: [{ role: 'system', content: 'x' }] })],
    ['a tool message without ok', JSON.stringify({ ...valid(), transcript: [{ role: 'tool', callId: 'c', name: 't', content: 'x' }] })],
    ['state that is an array', JSON.stringify({ ...valid(), state: [1] })],
    ['another run’s snapshot', JSON.stringify({ ...valid(), runId: 'run-y' })],
    ['a __proto__ key', JSON.stringify(valid()).replace('"state":{}', '"state":{"__proto__":{"polluted":true}}')],
    ['text that is not JSON', '{"version": 1'],
  ]
  for (const [what, text] of corrupt) {
    it(`refuses a checkpoint that is ${what} with outcome_unknown, and resume runs nothing`, async () => {
      const logger = spyLogger()
      const { checkpoints, tablePrefix } = await pg.stores({ logger })
      await pg.pool.query(`INSERT INTO "${tablePrefix}checkpoints" (run_id, snapshot, updated_at) VALUES ('run-x', $1, 0)`, [text])
      const { readFile, reads } = files({})
      const model = healthy()
      const agent = createAgent({ model, tools: [readFile], checkpoints })
      await expect(agent.resume('run-x')).rejects.toMatchObject({
        code: 'outcome_unknown',
        category: 'user',
        details: { runId: 'run-x', problem: expect.any(String) },
      })
      expect(model.requests).toHaveLength(0)
      expect(reads()).toBe(0)
      expect(({} as Record<string, unknown>).polluted).toBeUndefined()
      expect(logger.warnings).toEqual([expect.objectContaining({ msg: expect.stringContaining('corrupt') })])
    })
  }
})
