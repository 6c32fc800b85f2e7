// The checks on what the world saw: every write at most once, counted per idempotency key and per
// logical write (run, tool, canonical arguments); every write under the one key the idempotency
// layer issued for it; and one driver per run at a time, judged by the order of the world's records.
import type { Act, Anomaly, IssuedKey, LedgerRow } from './checker.js'

/** The same JSON whatever the key order: an approval's arguments and the ledger's compare by value. */
export function canonicalArgs(text: string): string {
  try {
    const value = JSON.parse(text) as unknown
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return text
    return JSON.stringify(Object.fromEntries(Object.entries(value).sort(([a], [b]) => (a < b ? -1 : 1))))
  } catch {
    return text
  }
}

/** A logical write: the same tool, run and arguments are one write, whatever key or call id it carried. */
const writeOf = (row: { run_id: string; tool: string; args: string }) => JSON.stringify([row.run_id, row.tool, canonicalArgs(row.args)])

function groupBy<T>(rows: readonly T[], keyOf: (row: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>()
  for (const row of rows) {
    const key = keyOf(row)
    const group = groups.get(key)
    if (group === undefined) groups.set(key, [row])
    else group.push(row)
  }
  return groups
}

export interface WriteCounts {
  /** Executions beyond the first of one idempotency key. */
  readonly byKey: number
  /** Executions beyond the first of one logical write, whatever keys they carried. */
  readonly byWrite: number
}

/**
 * Duplicates by key and by logical write; a logical write seen under more than one key (the layer
 * issued several, or the world saw several); a key the world saw that the layer never issued for that
 * write (a tool that records a key of its own); a write without a key.
 */
export function checkWrites(ledger: readonly LedgerRow[], issued: readonly IssuedKey[], anomalies: Anomaly[]): WriteCounts {
  let byKey = 0
  let byWrite = 0
  const keyed = ledger.filter((row): row is LedgerRow & { idem_key: string } => row.idem_key !== null)
  for (const row of ledger) {
    if (row.idem_key === null)
      anomalies.push({ kind: 'unkeyed_write', runId: row.run_id, detail: `${row.tool} ran without an idempotency key` })
  }
  for (const [key, rows] of groupBy(keyed, (row) => row.idem_key)) {
    if (rows.length < 2) continue
    byKey += rows.length - 1
    const first = rows[0] as LedgerRow
    anomalies.push({ kind: 'duplicate_by_key', runId: first.run_id, detail: `${first.tool} with key ${key} executed ${rows.length} times` })
  }
  const issuedByWrite = groupBy(issued, writeOf)
  for (const [write, rows] of groupBy(ledger, writeOf)) {
    const first = rows[0] as LedgerRow
    const what = `${first.tool} ${canonicalArgs(first.args)}`
    if (rows.length > 1) {
      byWrite += rows.length - 1
      anomalies.push({ kind: 'duplicate_write', runId: first.run_id, detail: `${what} executed ${rows.length} times` })
    }
    const given = new Set((issuedByWrite.get(write) ?? []).map((row) => row.idem_key))
    const seen = new Set(rows.flatMap((row) => (row.idem_key === null ? [] : [row.idem_key])))
    if (given.size > 1 || seen.size > 1) {
      const detail = `${what} under several keys: the idempotency layer issued ${[...given].join(', ') || 'none'}; the world saw ${[...seen].join(', ')}`
      anomalies.push({ kind: 'key_changed', runId: first.run_id, detail })
    }
    for (const key of seen) {
      if (!given.has(key))
        anomalies.push({
          kind: 'foreign_key',
          runId: first.run_id,
          detail: `${what} reached the world with key ${key}, which the idempotency layer never issued for it`,
        })
    }
  }
  return { byKey, byWrite }
}

/**
 * One driver per run at a time: in the order the world recorded a run's requests (model calls,
 * quotes, writes), once a drive has been followed by another, it must not act again. A run handed
 * over (its worker died, a pause outlived its claim) is fine; a drive that wakes and acts after its
 * successor started is not. Returns the number of runs with an overlap.
 */
export function checkDrivers(acts: readonly Act[], anomalies: Anomaly[]): number {
  let overlaps = 0
  for (const [runId, rows] of groupBy(acts, (act) => act.run_id)) {
    const finished = new Set<string>()
    let current: string | undefined
    for (const act of rows) {
      if (act.driver === current) continue
      if (current !== undefined) finished.add(current)
      if (finished.has(act.driver)) {
        overlaps++
        anomalies.push({
          kind: 'overlapping_drivers',
          runId,
          detail: `drive ${act.driver} made a ${act.what} request after drive ${current} had taken the run over`,
        })
        break
      }
      current = act.driver
    }
  }
  return overlaps
}
