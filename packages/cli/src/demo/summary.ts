import type { RunOutcome } from '@shallot/agent'
import type { StackEvent } from '@shallot/core'
import { color } from './paint.js'
import type { Executions } from './tools.js'

/** What the demo saw of its run besides the outcome. */
export interface DemoTally {
  readonly events: readonly StackEvent[]
  readonly executions: Executions
  /** The card charges the payment tool applied. */
  readonly charges: readonly string[]
  readonly elapsedMs: number
  /** Whether the run ran on the real clock (else virtual time). */
  readonly realTime: boolean
}

/** Prints the table of what happened and, for a stopped run, its failure report. */
export function summarize(print: (line: string) => void, outcome: RunOutcome, tally: DemoTally): void {
  const { events, executions, charges, elapsedMs, realTime } = tally
  const count = (type: string, where: (e: StackEvent) => boolean = () => true) => events.filter((e) => e.type === type && where(e)).length
  const toolMessages = outcome.transcript.filter((m) => m.role === 'tool')
  const calls = new Set(events.map((e) => e.callId)).size
  const rows: Array<[string, string | number]> = [
    ['tool calls (logical)', Math.max(calls, toolMessages.length)],
    ['tool executions (attempts)', [...executions.values()].reduce((a, b) => a + b, 0)],
    ['retries', count('retry.scheduled')],
    ['writes not repeated', count('retry.stopped', (e) => e.reason === 'unsafe_write')],
    ['unknown writes reconciled', count('idempotency.reconciled', (e) => e.outcome !== 'unknown')],
    ['replays', count('idempotency.replayed')],
    ['breaker trips', count('circuit-breaker.state', (e) => e.to === 'open')],
    [
      'refusals (breaker, idempotency, stuck-loop)',
      count('circuit-breaker.refused') + count('idempotency.refused') + count('stuck-loop.refused'),
    ],
    ['soft errors the model read', toolMessages.filter((m) => !m.ok).length],
    ['hard errors', outcome.status === 'stopped' ? 1 : 0],
    ['card charges applied', charges.length],
    [realTime ? 'elapsed (real)' : 'elapsed (virtual)', `${(elapsedMs / 1000).toFixed(1)} s`],
  ]
  print('')
  print(color.bold('summary'))
  const width = Math.max(...rows.map(([k]) => k.length))
  for (const [key, value] of rows) print(`  ${key.padEnd(width)}  ${String(value).padStart(7)}`)
  print('')
  printOutcome(print, outcome)
}

/** The run's last word: its answer, or the hard stop and the failure report. */
export function printOutcome(print: (line: string) => void, outcome: RunOutcome): void {
  if (outcome.status === 'completed') {
    print(color.green(`completed: ${outcome.output}`))
    return
  }
  print(color.red(color.bold(`stopped: ${outcome.error.kind}`)))
  for (const line of outcome.report.text.split('\n')) print(`  ${line}`)
}
