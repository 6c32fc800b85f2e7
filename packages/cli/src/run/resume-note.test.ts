import type { RunSnapshot } from '@shallot/agent'
import type { Json } from '@shallot/core'
import { describe, expect, it } from 'vitest'
import { isLoopStop, withNote } from './resume-note.js'

const LOOPED: RunSnapshot = {
  version: 1,
  runId: 'r1',
  input: 'Read missing.txt',
  status: 'stopped',
  turn: 1,
  stepsUsed: 1,
  // What stuck-loop and its convergence check keep in a run's state, beside another layer's.
  state: {
    'shallot.stuck-loop': {
      version: 1,
      tick: 3,
      calls: {
        c6061515: { tool: 'read_file', seen: 3, attempts: 3, failures: 3, same: 3, outcome: 'e', lastError: 'not_found', lastHint: '' },
      },
    },
    'shallot.stuck-loop.convergence': { turns: [] } as unknown as Json,
    'shallot.other-layer': { kept: true },
  },
  transcript: [
    { role: 'user', content: 'Read missing.txt' },
    { role: 'assistant', toolCalls: [{ id: 'c1', name: 'read_file', args: { path: 'missing.txt' } }] },
    { role: 'tool', callId: 'c1', name: 'read_file', content: 'not found', ok: false },
  ],
  turns: [{ turn: 1, calls: [{ id: 'c1', name: 'read_file', ok: false, code: 'not_found', attempts: 1, replayed: false }] }],
}

describe('resuming with a note', () => {
  it('adds the note as the last message and leaves the checkpoint it came from untouched', () => {
    const noted = withNote(LOOPED, 'I created missing.txt')
    expect(noted.transcript.at(-1)).toEqual({ role: 'user', content: 'I created missing.txt' })
    expect(noted.transcript.slice(0, -1)).toEqual(LOOPED.transcript)
    expect(LOOPED.transcript).toHaveLength(3)
    expect(noted.turns).toEqual(LOOPED.turns)
  })

  it('forgets the repeats stuck-loop counted and the replies it compared, and nothing of other layers', () => {
    const { state } = withNote(LOOPED, 'I created missing.txt')
    expect(state['shallot.stuck-loop']).toMatchObject({ calls: {} })
    expect(state).not.toHaveProperty(['shallot.stuck-loop.convergence'])
    expect(state['shallot.other-layer']).toEqual({ kept: true })
    expect(LOOPED.state['shallot.stuck-loop']).toMatchObject({ calls: { c6061515: { failures: 3 } } })
  })

  it('refuses a run that waits for approvals or is parked, and a completed one, naming what to do instead', () => {
    const pendingTurn = {
      turn: 2,
      response: { toolCalls: [{ id: 'c2', name: 'pay', args: {} }] },
      results: {},
      pending: [{ callId: 'c2' }],
    }
    expect(() => withNote({ ...LOOPED, pendingTurn }, 'go')).toThrow(/waits for answers to its calls: give --approve/)
    expect(() => withNote({ ...LOOPED, status: 'parked', pendingTurn }, 'go')).toThrow(/is parked: its waiting calls run again first/)
    expect(() => withNote({ ...LOOPED, status: 'completed' }, 'go')).toThrow(/completed; a note has no turn to go to/)
  })

  it('tells a stuck-loop stop from the others', () => {
    const stop = (kind: string, details: Record<string, unknown> = {}) => ({ status: 'stopped', error: { kind, details } })
    expect(isLoopStop(stop('loop_detected'))).toBe(true)
    expect(isLoopStop(stop('user_input_required', { reason: 'converged' }))).toBe(true)
    expect(isLoopStop(stop('user_input_required', { reason: 'approval' }))).toBe(false)
    expect(isLoopStop(stop('budget_exhausted'))).toBe(false)
    expect(isLoopStop({ status: 'completed' })).toBe(false)
  })
})
