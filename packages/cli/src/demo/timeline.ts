import type { ParkingOutcome, RunOutcome } from '@shallot/agent'
import type { Message, ModelRequest, StackEvent } from '@shallot/core'
import { color } from './paint.js'

function short(text: string, max = 120): string {
  const flat = text.replace(/\s+/g, ' ')
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat
}

export const seconds = (ms: number) => `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)}s`

/** One line per notable layer event, or nothing for events the story does not need. */
export function describe(event: StackEvent): string | undefined {
  const f = event as Record<string, unknown>
  switch (event.type) {
    case 'retry.scheduled':
      return `↻ retry: attempt ${Number(f.attempt) - 1} failed (${String(f.code)}), next in ${Math.round(Number(f.delayMs))} ms (full jitter)`
    case 'retry.stopped':
      return f.reason === 'unsafe_write'
        ? `⊘ retry: not repeating a write after ${String(f.code)} (the charge may have gone through)`
        : undefined
    case 'timeout.expired':
      return `⏱ timeout: attempt ${String(f.attempt)} gave up after ${seconds(Number(f.timeoutMs))}`
    case 'circuit-breaker.state':
      return `⚡ circuit ${String(f.key)}: ${String(f.from)} → ${String(f.to)}`
    case 'circuit-breaker.refused':
      return '⚡ circuit open: refused without calling the tool'
    case 'idempotency.replayed':
      return '⟲ idempotency: replayed the stored result'
    case 'idempotency.outcome_unknown':
      return '? idempotency: outcome unknown, recorded; an identical call will be refused unless the tool can check'
    case 'idempotency.reconcile_attempt':
      return `⌕ idempotency: asked ${event.tool}'s reconcile (${String(f.attempt)}): ${String(f.answer)}`
    case 'idempotency.reconciled':
      return reconciled(String(f.outcome), Number(f.attempts))
    case 'idempotency.refused':
      return `⊘ idempotency: refused (${String(f.code)}); the tool did not run`
    case 'stuck-loop.refused':
      return '⛔ stuck-loop: refused before running, this exact call already failed'
    case 'stuck-loop.stopped':
      return '⛔ stuck-loop: the model is not adapting, stopping the run'
    case 'error-classifier.classified':
      return f.status !== undefined ? `≡ classifier: HTTP ${String(f.status)} → ${String(f.code)}` : undefined
    default:
      return undefined
  }
}

function reconciled(outcome: string, attempts: number): string {
  if (outcome === 'applied') return '✓ idempotency: the write had landed; the call completes with its result, stored once'
  if (outcome === 'not_applied') return '✓ idempotency: the write did not land; repeating it is safe'
  return `? idempotency: ${attempts} checks could not tell whether the write landed`
}

type Requests = readonly (Omit<ModelRequest, 'signal'> | undefined)[]

/** Prints a run's transcript as it grows: each `upTo` prints the messages the last one did not. */
export interface TimelinePrinter {
  /**
   * Prints the messages of `transcript` not printed yet, with each call's layer events and result.
   * `requests[t - 1]` is the request that made turn t (for the notes the layers put on tools).
   */
  upTo(transcript: readonly Message[], events: readonly StackEvent[], requests?: Requests): void
  /** For a stopped run: the events of the calls of the turn the run dropped. */
  inFlight(outcome: ParkingOutcome, events: readonly StackEvent[]): void
}

function eventLines(print: (line: string) => void, events: readonly StackEvent[]): void {
  for (const event of events) {
    const line = describe(event)
    if (line !== undefined) print(`           ${color.yellow(line)} ${color.dim(`@${seconds(event.at)}`)}`)
  }
}

/**
 * A timeline printed turn by turn while the run goes: `shallot run` calls `upTo` with every model
 * request's messages (by then the previous turn's results are in), the demo once with the outcome.
 */
export function timelinePrinter(print: (line: string) => void): TimelinePrinter {
  let printed = 0
  let turn = 0
  let told = false
  return {
    upTo(transcript, events, requests = []) {
      const byCall = new Map<string, StackEvent[]>()
      for (const event of events) byCall.set(event.callId, [...(byCall.get(event.callId) ?? []), event])
      const results = new Map<string, Extract<Message, { role: 'tool' }>>()
      for (const message of transcript) if (message.role === 'tool') results.set(message.callId, message)
      for (const message of transcript.slice(printed)) {
        printed++
        if (message.role === 'user') {
          // The first is the task; a later one is a person's note, added when the run was resumed.
          print(`${color.bold(told ? 'note' : 'task')}  ${message.content}`)
          print('')
          told = true
          continue
        }
        if (message.role !== 'assistant') continue
        turn++
        const before = new Map((requests[turn - 2]?.tools ?? []).map((t) => [t.name, t.note]))
        for (const tool of requests[turn - 1]?.tools ?? []) {
          if (tool.note !== undefined && tool.note !== before.get(tool.name))
            print(`${color.dim(`turn ${String(turn).padStart(2)}`)}  ${color.yellow(`the request marks ${tool.name}: ${tool.note}`)}`)
        }
        // A turn of tool calls alone has no words to quote: its number, and nothing where they would be.
        const words = short(message.content ?? '', 90).trim()
        print(`${color.dim(`turn ${String(turn).padStart(2)}`)}${words === '' ? '' : `  ${color.magenta(`“${words}”`)}`}`)
        for (const call of message.toolCalls) {
          print(`         → ${color.cyan(call.name)} ${JSON.stringify(call.args)}`)
          eventLines(print, byCall.get(call.id) ?? [])
          const result = results.get(call.id)
          if (result !== undefined) print(`           ${result.ok ? color.green('✓') : color.red('✗')} ${short(result.content)}`)
        }
      }
    },
    inFlight(outcome, events) {
      // The turn that stopped or parked the run is not in the transcript; its events still tell what happened.
      if (outcome.status === 'completed') return
      const seen = new Set<string>()
      for (const message of outcome.transcript) if (message.role === 'tool') seen.add(message.callId)
      const dropped = events.filter((e) => !seen.has(e.callId))
      if (dropped.length === 0) return
      const state = outcome.status === 'parked' ? 'parked: its waiting calls run again on resume' : 'in flight when the run stopped'
      print(`${color.dim(`turn ${String(turn + 1).padStart(2)}`)}  ${color.dim(`(${state})`)}`)
      eventLines(print, dropped)
    },
  }
}

/** Prints the run turn by turn: the model's words and calls, what each layer did, and what the model read back. */
export function printTimeline(
  print: (line: string) => void,
  outcome: RunOutcome,
  events: readonly StackEvent[],
  requests: Requests = [],
): void {
  const printer = timelinePrinter(print)
  printer.upTo(outcome.transcript, events, requests)
  printer.inFlight(outcome, events)
}
