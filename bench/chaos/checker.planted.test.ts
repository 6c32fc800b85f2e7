// Each anomaly a fleet can commit, planted in a history the way the soak records it, and the checker
// naming it by kind. The histories are the ones the planted runs of `pnpm chaos --plant` leave (a
// worker killed between its charge and the charge's record, then the run taken over elsewhere).
import { describe, expect, it } from 'vitest'
import { type Act, checkHistory, type History, type IssuedKey, type JobFinal, type LedgerRow } from './checker.js'

const plan = (runId: string) => ({ runId, parks: false, refund: false, approve: false, model429: false, enqueueAt: 0 })
const done: JobFinal = { state: 'completed', status: 'completed', kind: null, enqueuedAt: 1000, finishedAt: 3000 }
const ARGS = '{"order":"r1","cents":500}'
const charge = (key: string, driver: string): LedgerRow => ({
  run_id: 'r1',
  tool: 'charge_card',
  call_id: 'charge',
  idem_key: key,
  args: ARGS,
  driver,
})
const issued = (key: string): IssuedKey => ({ run_id: 'r1', tool: 'charge_card', args: '{"cents":500,"order":"r1"}', idem_key: key })
const act = (driver: string, what: Act['what']): Act => ({ run_id: 'r1', driver, what })

function history(parts: Partial<History>): History {
  return {
    plans: [plan('r1')],
    jobs: new Map([['r1', done]]),
    ledger: [],
    issued: [],
    acts: [],
    approvals: [],
    outcomes: new Map(),
    extraJobs: new Map(),
    boundMs: 10_000,
    ...parts,
  }
}

const kinds = (h: History) => [...new Set(checkHistory(h).anomalies.map((a) => `${a.kind} ${a.runId}`))].sort()

describe('the checker, against each planted anomaly', () => {
  it('a key changed on resume: the charge ran under the key of the first driver and again under a new one', () => {
    const h = history({ ledger: [charge('k-a', 'A'), charge('k-b', 'B')], issued: [issued('k-a'), issued('k-b')] })
    expect(kinds(h)).toEqual(['duplicate_write r1', 'key_changed r1'])
    expect(checkHistory(h).duplicates).toEqual({ byKey: 0, byWrite: 1 })
  })

  it('a tool that records its own key: each execution under a key the idempotency layer never issued', () => {
    const twice = history({ ledger: [charge('own-1', 'A'), charge('own-2', 'A')], issued: [issued('k')] })
    expect(kinds(twice)).toEqual(['duplicate_write r1', 'foreign_key r1', 'key_changed r1'])
    expect(checkHistory(twice).duplicates).toEqual({ byKey: 0, byWrite: 1 })
    // Once is enough to be caught: the world saw a key that names no call the layer guarded.
    expect(kinds(history({ ledger: [charge('own-1', 'A')], issued: [issued('k')] }))).toEqual(['foreign_key r1'])
  })

  it('a store that forgets: the same key executed by the first driver and again by the one that took over', () => {
    const h = history({ ledger: [charge('k', 'A'), charge('k', 'B')], issued: [issued('k'), issued('k')] })
    expect(kinds(h)).toEqual(['duplicate_by_key r1', 'duplicate_write r1'])
    expect(checkHistory(h).duplicates).toEqual({ byKey: 1, byWrite: 1 })
  })

  it('a worker that ignores the run claim: two drives of one run whose requests to the world interleave', () => {
    const h = history({ acts: [act('A', 'model'), act('B', 'model'), act('A', 'write'), act('B', 'model')] })
    expect(kinds(h)).toEqual(['overlapping_drivers r1'])
    expect(checkHistory(h).overlaps).toBe(1)
  })

  it('a run handed over once (one drive stops acting before the next starts) is not an overlap', () => {
    const h = history({
      acts: [act('A', 'model'), act('A', 'quote'), act('B', 'model'), act('B', 'write'), act('B', 'model')],
      ledger: [charge('k', 'B')],
      issued: [issued('k')],
    })
    expect(checkHistory(h).anomalies).toEqual([])
  })
})
