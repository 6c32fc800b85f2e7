import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createAgent } from '@shallot/agent'
import { defineTool, OptionsError, ToolError } from '@shallot/core'
import { scriptedModel } from '@shallot/testing'
import { afterAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { sqliteCheckpoints } from './index.js'

const dir = mkdtempSync(join(tmpdir(), 'shallot-sqlite-checkpoints-'))
let files = 0
const file = () => join(dir, `run-${++files}.db`)
afterAll(() => rmSync(dir, { recursive: true, force: true }))

function counter() {
  const writes: string[] = []
  const write = defineTool({
    name: 'write_note',
    description: 'Write a note',
    effect: 'write',
    input: z.object({ text: z.string() }),
    execute: ({ text }) => {
      writes.push(text)
      return 'written'
    },
  })
  return { write, writes }
}

describe('sqliteCheckpoints', () => {
  it('resumes a run stopped by its step budget from another connection, without repeating a completed write', async () => {
    const path = file()
    const { write, writes } = counter()
    const script = [
      { toolCalls: [{ name: 'write_note', args: { text: 'one' } }] },
      { toolCalls: [{ name: 'write_note', args: { text: 'two' } }] },
      { text: 'done' },
    ]
    const first = sqliteCheckpoints({ path })
    const stopped = await createAgent({ model: scriptedModel(script), tools: [write], checkpoints: first, limits: { maxTurns: 1 } }).run({
      runId: 'run-a',
      input: 'write two notes',
    })
    first.close()
    expect(stopped.status).toBe('stopped')
    expect(writes).toEqual(['one'])

    const second = sqliteCheckpoints({ path })
    expect(second.runIds()).toEqual(['run-a'])
    const done = await createAgent({ model: scriptedModel(script.slice(1)), tools: [write], checkpoints: second }).resume('run-a')
    expect(done).toMatchObject({ status: 'completed', output: 'done' })
    expect(writes).toEqual(['one', 'two'])
    expect(second.load('run-a')).toMatchObject({ status: 'completed', output: 'done' })
    expect(second.remove('run-a')).toBe(true)
    expect(second.load('run-a')).toBeUndefined()
    second.close()
  })

  it('keeps a parked run: another connection wakes it after wakeAt and redoes only the waiting call', async () => {
    const path = file()
    const { write, writes } = counter()
    let lookups = 0
    const lookup = defineTool({
      name: 'lookup',
      description: 'Look something up',
      effect: 'read',
      input: z.object({}),
      execute: () => {
        if (lookups++ === 0)
          throw new ToolError('rate_limited', 'slow down', { category: 'transient', safeToRepeat: true, retryAfterMs: 60_000 })
        return 'found'
      },
    })
    let wall = 1_800_000_000_000
    const park = { afterMs: 10_000, wallNow: () => wall }
    const script = [
      {
        toolCalls: [
          { name: 'write_note', args: { text: 'one' } },
          { name: 'lookup', args: {} },
        ],
      },
      { text: 'done' },
    ]
    const first = sqliteCheckpoints({ path })
    const parked = await createAgent({ model: scriptedModel(script), tools: [write, lookup], checkpoints: first, park }).run({
      runId: 'run-p',
      input: 'note and look up',
    })
    first.close()
    expect(parked).toMatchObject({ status: 'parked', wakeAt: wall + 60_000, reason: { code: 'rate_limited', tool: 'lookup' } })

    wall += 60_000
    const second = sqliteCheckpoints({ path })
    expect(second.load('run-p')).toMatchObject({ status: 'parked', parked: { wakeAt: wall } })
    const done = await createAgent({ model: scriptedModel(script.slice(1)), tools: [write, lookup], checkpoints: second, park }).resume(
      'run-p',
    )
    expect(done).toMatchObject({ status: 'completed', output: 'done' })
    expect(writes).toEqual(['one'])
    expect(lookups).toBe(2)
    second.close()
  })

  it.each([
    ['not JSON', '{"version": 1', /not JSON/],
    ['a __proto__ key', '{"__proto__": {"admin": true}}', /__proto__/],
    ['a wrong field', JSON.stringify({ version: 1, runId: 'r', input: 'x', status: 'running', turn: -1 }), /turn/],
    ['another run’s snapshot', null, /snapshot of run "other"/],
  ])('refuses a row holding %s with outcome_unknown instead of resuming', (_, text, problem) => {
    const store = sqliteCheckpoints({ path: ':memory:' })
    const other = {
      version: 1,
      runId: 'other',
      input: 'x',
      status: 'running',
      turn: 0,
      stepsUsed: 0,
      state: {},
      transcript: [{ role: 'user', content: 'x' }],
      turns: [],
    }
    store.database
      .prepare('INSERT INTO shallot_checkpoints (run_id, snapshot, saved_at) VALUES (?, ?, 0)')
      .run('r', text ?? JSON.stringify(other))
    let error: unknown
    try {
      store.load('r')
    } catch (err) {
      error = err
    }
    expect(error).toBeInstanceOf(ToolError)
    expect(error).toMatchObject({ code: 'outcome_unknown', message: expect.stringMatching(problem) })
    store.close()
  })

  it('lists run ids most recent first and refuses bad options by name', () => {
    const store = sqliteCheckpoints({ path: ':memory:', tableName: 'runs' })
    for (const runId of ['a', 'b', 'c'])
      store.save({ version: 1, runId, input: 'x', status: 'running', turn: 0, stepsUsed: 0, state: {}, transcript: [], turns: [] })
    store.save({ version: 1, runId: 'a', input: 'x', status: 'running', turn: 1, stepsUsed: 1, state: {}, transcript: [], turns: [] })
    expect(store.runIds()).toEqual(['a', 'c', 'b'])
    store.close()
    expect(() => sqliteCheckpoints({})).toThrow(OptionsError)
    expect(() => sqliteCheckpoints({ path: 'x.db', tableName: 'x; DROP TABLE y' })).toThrow(/tableName/)
    expect(() => sqliteCheckpoints({ path: join(dir, 'no-such-dir', 'run.db') })).toThrow(/directory does not exist|unable to open/)
  })
})
