// The history file of a failing soak: it replays the same schedule (same seed, same shape), and a
// file whose schedule the generator no longer draws from that seed is refused rather than replayed.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { replayShape, writeHistoryFile } from './history-file.js'
import { soakSchedule } from './schedule.js'

const dir = mkdtempSync(join(tmpdir(), 'shallot-chaos-history-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const shape = { seed: 11, runs: 40, workers: 3, spanMs: 10_000, faults: 16, lockMs: 4000, plant: true }
const history = {
  plans: [],
  jobs: new Map([['r1', { state: 'failed', enqueuedAt: 1 }]]),
  extraJobs: new Map(),
  ledger: [],
  issued: [],
  acts: [],
  approvals: [],
  outcomes: new Map(),
  boundMs: 60_000,
}

describe('the history file', () => {
  it('replays the schedule it was written for, and keeps the anomalies by kind and the history', () => {
    const path = join(dir, 'h.json')
    const anomalies = [{ kind: 'lost_run' as const, runId: 'r1', detail: 'lost' }]
    writeHistoryFile(path, { shape, schedule: soakSchedule(shape), anomalies, history, timelines: new Map([['r1', ['0.1 active']]]) })
    expect(replayShape(path)).toEqual(shape)
    const file = JSON.parse(readFileSync(path, 'utf8'))
    expect(file.anomalies).toEqual(anomalies)
    expect(file.history.jobs).toEqual([['r1', { state: 'failed', enqueuedAt: 1 }]])
    expect(file.history.timelines).toEqual([['r1', ['0.1 active']]])
  })

  it('refuses a file whose schedule the seed no longer draws, and a file that is not a history', () => {
    const path = join(dir, 'changed.json')
    const schedule = soakSchedule(shape)
    writeHistoryFile(path, {
      shape,
      schedule: { ...schedule, skews: schedule.skews.map((s) => s + 1) },
      anomalies: [],
      history,
      timelines: new Map(),
    })
    expect(() => replayShape(path)).toThrow(/the schedule drawn from seed 11 is not the one in .*changed\.json/)
    writeFileSync(join(dir, 'junk.json'), '{"version":1,"shape":{"seed":"x"}}')
    expect(() => replayShape(join(dir, 'junk.json'))).toThrow(/is not a chaos history file/)
    expect(() => replayShape(join(dir, 'missing.json'))).toThrow(/cannot read the history file/)
  })
})
