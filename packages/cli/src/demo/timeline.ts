import type { Message, ModelRequest, RunOutcome, StackEvent } from '@shallot/core'
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
      return '? idempotency: outcome unknown, recorded; an identical call will be refused'
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

/** Prints the run turn by turn: the model's words and calls, what each layer did, and what the model read back. */
export function printTimeline(
  print: (line: string) => void,
  outcome: RunOutcome,
  events: readonly StackEvent[],
  requests: readonly Omit<ModelRequest, 'signal'>[] = [],
): void {
  const byCall = new Map<string, StackEvent[]>()
  for (const event of events) byCall.set(event.callId, [...(byCall.get(event.callId) ?? []), event])
  const results = new Map<string, Extract<Message, { role: 'tool' }>>()
  for (const message of outcome.transcript) if (message.role === 'tool') results.set(message.callId, message)
  let turn = 0
  for (const message of outcome.transcript) {
    if (message.role === 'user') {
      print(`${color.bold('task')}  ${message.content}`)
      print('')
      continue
    }
    if (message.role !== 'assistant') continue
    turn++
    const before = new Map((requests[turn - 2]?.tools ?? []).map((t) => [t.name, t.note]))
    for (const tool of requests[turn - 1]?.tools ?? []) {
      if (tool.note !== undefined && tool.note !== before.get(tool.name))
        print(`${color.dim(`turn ${String(turn).padStart(2)}`)}  ${color.yellow(`the request marks ${tool.name}: ${tool.note}`)}`)
    }
    print(`${color.dim(`turn ${String(turn).padStart(2)}`)}  ${color.magenta(`“${short(message.content ?? '', 90)}”`)}`)
    for (const call of message.toolCalls) {
      print(`         → ${color.cyan(call.name)} ${JSON.stringify(call.args)}`)
      for (const event of byCall.get(call.id) ?? []) {
        const line = describe(event)
        if (line !== undefined) print(`           ${color.yellow(line)} ${color.dim(`@${seconds(event.at)}`)}`)
      }
      const result = results.get(call.id)
      if (result !== undefined) print(`           ${result.ok ? color.green('✓') : color.red('✗')} ${short(result.content)}`)
    }
  }
  // The turn that stopped the run is not in the transcript (it was dropped); its events still tell what happened.
  if (outcome.status === 'stopped') {
    const seen = new Set(results.keys())
    const dropped = events.filter((e) => !seen.has(e.callId))
    if (dropped.length > 0) {
      print(`${color.dim(`turn ${String(turn + 1).padStart(2)}`)}  ${color.dim('(in flight when the run stopped)')}`)
      for (const event of dropped) {
        const line = describe(event)
        if (line !== undefined) print(`           ${color.yellow(line)} ${color.dim(`@${seconds(event.at)}`)}`)
      }
    }
  }
}
