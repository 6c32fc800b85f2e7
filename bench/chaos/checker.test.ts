import { describe, expect, it } from 'vitest'
import { canonicalArgs, checkHistory, type History, type JobFinal, type LedgerRow, percentile } from './checker.js'
import { FAULT_KINDS, PLANTS, soakSchedule } from './schedule.js'

const plan = (runId: string) => ({ runId, parks: false, refund: true, approve: true, model429: false, enqueueAt: 0 })
const done: JobFinal = { state: 'completed', status: 'completed', kind: null, enqueuedAt: 1000, finishedAt: 3000 }
const charge = (runId: string, key: string | null): LedgerRow => ({
  run_id: runId,
  tool: 'charge_card',
  call_id: 'charge',
  idem_key: key,
  args: `{"order":"${runId}","cents":500}`,
  driver: 'd1',
})
const issued = (runId: string, key: string) => ({
  run_id: runId,
  tool: 'charge_card',
  args: `{"order":"${runId}","cents":500}`,
  idem_key: key,
})
const said = (verdict: { anomalies: readonly { kind: string; runId: string; detail: string }[] }) =>
  verdict.anomalies.map((a) => `${a.kind} ${a.runId}: ${a.detail}`)

function history(parts: Partial<History>): History {
  return {
    plans: [plan('r1')],
    jobs: new Map([['r1', done]]),
    ledger: [charge('r1', 'k1')],
    issued: [issued('r1', 'k1')],
    acts: [],
    extraJobs: new Map(),
    approvals: [],
    outcomes: new Map(),
    boundMs: 10_000,
    ...parts,
  }
}

describe('the chaos checker', () => {
  it('passes a run that completed in time with one keyed write', () => {
    expect(checkHistory(history({})).anomalies).toEqual([])
  })

  it('counts a keyed write executed twice as a duplicate, and a write without a key as a violation', () => {
    const verdict = checkHistory(history({ ledger: [charge('r1', 'k1'), charge('r1', 'k1'), charge('r1', null)] }))
    expect(verdict.duplicates).toEqual({ byKey: 1, byWrite: 2 })
    expect(said(verdict)).toEqual([
      'unkeyed_write r1: charge_card ran without an idempotency key',
      'duplicate_by_key r1: charge_card with key k1 executed 2 times',
      'duplicate_write r1: charge_card {"cents":500,"order":"r1"} executed 3 times',
    ])
    expect(verdict.byKind).toEqual({ unkeyed_write: 1, duplicate_by_key: 1, duplicate_write: 1 })
  })

  it('calls a run lost when its job is missing or never reached a terminal state', () => {
    const verdict = checkHistory(
      history({ plans: [plan('r1'), plan('r2'), plan('r3')], jobs: new Map([['r2', { state: 'active', enqueuedAt: 0 }]]) }),
    )
    expect(verdict.lost).toEqual(['r1', 'r2', 'r3'])
  })

  it('holds a duplicate job of a run (enqueued under its own id) to a terminal state too', () => {
    const extraJobs = new Map([
      ['r1.again', { ...done, runId: 'r1' }],
      ['r1.third', { state: 'delayed', enqueuedAt: 0, runId: 'r1' }],
    ])
    const verdict = checkHistory(history({ extraJobs }))
    expect(verdict.lost).toEqual(['r1.third'])
    expect(said(verdict)).toEqual(['lost_run r1: its duplicate job r1.third was delayed at the end'])
  })

  it('holds a run to the bound, and a NaN or missing finish time fails it rather than passing', () => {
    const late = { ...done, finishedAt: 20_000 }
    const never = { ...done, finishedAt: Number.NaN }
    const verdict = checkHistory(
      history({
        plans: [plan('r1'), plan('r2')],
        jobs: new Map([
          ['r1', late],
          ['r2', never],
        ]),
        ledger: [],
      }),
    )
    expect(said(verdict)).toEqual([
      'late r1: reached its terminal state after 19000 ms, past the bound of 10000 ms',
      'late r2: reached its terminal state after NaN ms, past the bound of 10000 ms',
    ])
  })

  it('refuses a stop without a kind and a failed job as terminal states', () => {
    const verdict = checkHistory(
      history({
        plans: [plan('r1'), plan('r2')],
        jobs: new Map<string, JobFinal>([
          ['r1', { ...done, status: 'stopped', kind: null }],
          ['r2', { state: 'failed', failedReason: 'boom', enqueuedAt: 0 }],
        ]),
        ledger: [],
      }),
    )
    expect(said(verdict)).toEqual([
      'stopped_without_kind r1: stopped without a kind',
      'failed_job r2: its job failed (boom) instead of completing or stopping with a kind',
    ])
  })

  it('matches each outcome_unknown against the ledger, and flags a success the ledger never saw', () => {
    const outcomes = new Map([
      ['r1', [{ name: 'charge_card', ok: false, content: '{"code":"outcome_unknown"}' }]],
      ['r2', [{ name: 'charge_card', ok: false, content: 'outcome_unknown: may have run' }]],
      ['r3', [{ name: 'charge_card', ok: true, content: 'charged' }]],
    ])
    const jobs = new Map([
      ['r1', done],
      ['r2', done],
      ['r3', done],
    ])
    const verdict = checkHistory(history({ plans: [plan('r1'), plan('r2'), plan('r3')], jobs, outcomes }))
    expect(verdict.unknowns).toEqual([
      { runId: 'r1', tool: 'charge_card', landed: true },
      { runId: 'r2', tool: 'charge_card', landed: false },
    ])
    expect(said(verdict)).toEqual(['phantom_success r3: charge_card reported done but the ledger has no such write'])
  })

  it('counts a success whose write a failover rolled back apart from a success the ledger never saw', () => {
    const outcomes = new Map([
      ['r1', [{ name: 'charge_card', ok: true, content: 'charged' }]],
      ['r2', [{ name: 'charge_card', ok: true, content: 'charged' }]],
    ])
    const plans = [plan('r1'), plan('r2')]
    const jobs = new Map([
      ['r1', done],
      ['r2', done],
    ])
    const verdict = checkHistory(history({ plans, jobs, outcomes, ledger: [], issued: [], forgotten: [charge('r1', 'k1')] }))
    expect(verdict.forgotten).toBe(1)
    expect(said(verdict)).toEqual(['phantom_success r2: charge_card reported done but the ledger has no such write'])
  })

  it('refuses a refund approved for other arguments, denied, or for another run; key order does not matter', () => {
    const refund = (runId: string, args: string): LedgerRow => ({
      run_id: runId,
      tool: 'refund_payment',
      call_id: 'refund',
      idem_key: `k-${runId}`,
      args,
      driver: 'd1',
    })
    const approval = (runId: string, args: string, answer: string) => ({
      run_id: runId,
      call_id: 'refund',
      tool: 'refund_payment',
      args,
      answer,
    })
    const plans = ['a', 'b', 'c', 'd'].map(plan)
    const verdict = checkHistory(
      history({
        plans,
        jobs: new Map(plans.map((p) => [p.runId, done])),
        ledger: [
          refund('a', '{"order":"a","cents":300}'),
          refund('b', '{"order":"b","cents":300}'),
          refund('c', '{"order":"c","cents":300}'),
          refund('d', '{"order":"d","cents":300}'),
        ],
        issued: ['a', 'b', 'c', 'd'].map((id) => ({
          run_id: id,
          tool: 'refund_payment',
          args: `{"order":"${id}","cents":300}`,
          idem_key: `k-${id}`,
        })),
        approvals: [
          approval('a', '{"cents":300,"order":"a"}', 'approve'),
          approval('b', '{"order":"b","cents":30000}', 'approve'),
          approval('c', '{"order":"c","cents":300}', 'deny'),
          approval('a', '{"order":"d","cents":300}', 'approve'),
        ],
      }),
    )
    expect(said(verdict)).toEqual([
      'unapproved_refund b: refund_payment {"order":"b","cents":300} ran without an approval of those arguments',
      'unapproved_refund c: refund_payment {"order":"c","cents":300} ran without an approval of those arguments',
      'unapproved_refund d: refund_payment {"order":"d","cents":300} ran without an approval of those arguments',
    ])
  })

  it('holds a refund to an approval that a failover rolled back as to one the database kept', () => {
    const refund: LedgerRow = {
      run_id: 'r1',
      tool: 'refund_payment',
      call_id: 'refund',
      idem_key: 'k',
      args: '{"order":"r1","cents":300}',
      driver: 'd1',
    }
    const answer = { run_id: 'r1', call_id: 'refund', tool: 'refund_payment', args: '{"order":"r1","cents":300}', answer: 'approve' }
    const base = { ledger: [refund], issued: [{ run_id: 'r1', tool: 'refund_payment', args: refund.args, idem_key: 'k' }] }
    expect(said(checkHistory(history({ ...base, forgottenApprovals: [answer] })))).toEqual([])
    expect(said(checkHistory(history(base)))).toEqual([
      'unapproved_refund r1: refund_payment {"order":"r1","cents":300} ran without an approval of those arguments',
    ])
  })

  it('flags a write for a run that was never planned, even one named __proto__', () => {
    const verdict = checkHistory(
      history({ ledger: [charge('r1', 'k1'), charge('__proto__', 'k2')], issued: [issued('r1', 'k1'), issued('__proto__', 'k2')] }),
    )
    expect(said(verdict)).toEqual(['stranger_write __proto__: a write for a run nobody started'])
  })

  it('reads malformed approval arguments as text instead of throwing', () => {
    expect(canonicalArgs('{not json')).toBe('{not json')
    expect(canonicalArgs('{"b":1,"a":2}')).toBe('{"a":2,"b":1}')
    expect(canonicalArgs('[1]')).toBe('[1]')
  })

  it('takes percentiles of sorted values, NaN for none', () => {
    expect(percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 95)).toBe(10)
    expect(percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 50)).toBe(5)
    expect(percentile([], 95)).toBeNaN()
  })
})

describe('the soak schedule', () => {
  const shape = { seed: 7, runs: 400, workers: 3, spanMs: 100_000, faults: 40, lockMs: 4000, plant: true }

  it('is the same for a seed and differs across seeds', () => {
    expect(soakSchedule(shape)).toEqual(soakSchedule(shape))
    expect(soakSchedule({ ...shape, seed: 8 })).not.toEqual(soakSchedule(shape))
  })

  it('injects every kind, in time order, inside the window; pauses outlast the job lock and stay inside the claim', () => {
    const { faults } = soakSchedule(shape)
    expect(new Set(faults.map((f) => f.kind))).toEqual(new Set(FAULT_KINDS))
    expect(faults.map((f) => f.at)).toEqual([...faults.map((f) => f.at)].sort((a, b) => a - b))
    for (const fault of faults) expect(fault.at).toBeGreaterThanOrEqual(0)
    for (const fault of faults) expect(fault.at).toBeLessThan(shape.spanMs)
    for (const pause of faults.filter((f) => f.kind === 'worker_pause')) {
      expect(pause.ms).toBeGreaterThan(shape.lockMs)
      expect(pause.ms).toBeLessThan(2 * shape.lockMs)
    }
  })

  it('kills and pauses workers in bursts fifteen locks apart, each worker at most once a burst', () => {
    const deaths = soakSchedule(shape).faults.filter((f) => f.kind === 'worker_kill' || f.kind === 'worker_pause')
    const bursts = new Map<number, typeof deaths>()
    for (const death of deaths) bursts.set(death.at, [...(bursts.get(death.at) ?? []), death])
    expect(bursts.size).toBeGreaterThanOrEqual(2)
    const times = [...bursts.keys()]
    for (let i = 1; i < times.length; i++) expect((times[i] as number) - (times[i - 1] as number)).toBeGreaterThanOrEqual(15 * shape.lockMs)
    for (const burst of bursts.values()) expect(new Set(burst.map((f) => f.worker)).size).toBe(burst.length)
  })

  it('plants each misbehaviour in one run named after it, and two jobs for the run whose worker ignores the claim', () => {
    const planted = soakSchedule(shape).runs.filter((r) => r.plant !== undefined)
    expect(planted.map((r) => r.plant)).toEqual([...PLANTS])
    for (const run of planted) expect(run.runId).toContain(`-plant-${run.plant}-`)
    expect(planted.find((r) => r.plant === 'ignore_claim')?.duplicate).toBe('own_id')
    expect(soakSchedule({ ...shape, plant: false }).runs.some((r) => r.plant !== undefined)).toBe(false)
  })
})
