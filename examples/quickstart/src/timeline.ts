import type { Message, RunOutcome, StackEvent } from '@shallot/core'

const useColor = process.stdout.isTTY === true && process.env.NO_COLOR === undefined
const paint = (code: number) => (text: string) => (useColor ? `\x1b[${code}m${text}\x1b[0m` : text)
export const color = { dim: paint(2), bold: paint(1), red: paint(31), green: paint(32), yellow: paint(33), cyan: paint(36) }

export type Print = (line: string) => void

function short(text: string, max = 110): string {
  const flat = text.replace(/\s+/g, ' ')
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat
}

function describeEvent(event: StackEvent): string | undefined {
  const f = event as Record<string, unknown>
  switch (event.type) {
    case 'retry':
      return `↻ attempt ${Number(f.attempt) - 1} failed (${String(f.code)}); retrying in ${Math.round(Number(f.delayMs))} ms`
    case 'breaker.state':
      return `⚡ breaker ${String(f.key)}: ${String(f.from)} → ${String(f.to)}${f.reason ? ` (${String(f.reason)})` : ''}`
    case 'idempotency.replay':
      return '⟲ replayed the stored result; the tool did not run again'
    case 'stuck-loop.refused':
      return '⛔ refused before running: identical call already failed'
    default:
      return undefined
  }
}

/** Prints a run turn by turn: what the model asked, what came back, what the layers did in between. */
export function printRun(print: Print, outcome: RunOutcome, events: readonly StackEvent[]): void {
  const byCall = new Map<string, StackEvent[]>()
  for (const event of events) byCall.set(event.callId, [...(byCall.get(event.callId) ?? []), event])
  let turn = 0
  const results = new Map<string, Extract<Message, { role: 'tool' }>>()
  for (const message of outcome.transcript) if (message.role === 'tool') results.set(message.callId, message)
  for (const message of outcome.transcript) {
    if (message.role === 'user') print(`${color.dim('task')}    ${message.content}`)
    if (message.role !== 'assistant') continue
    turn++
    const label = color.dim(`turn ${String(turn).padEnd(3)}`)
    if (message.toolCalls.length === 0) {
      print(`${label} model: ${color.bold(JSON.stringify(short(message.content ?? '')))}`)
      continue
    }
    for (const call of message.toolCalls) {
      print(`${label} model → ${color.cyan(call.name)} ${JSON.stringify(call.args)}`)
      for (const event of byCall.get(call.id) ?? []) {
        const text = describeEvent(event)
        if (text) print(`          ${color.yellow(text)}`)
      }
      const result = results.get(call.id)
      if (result) print(`          ${result.ok ? color.green('✓') : color.red('✗')} ${short(result.content)}`)
    }
  }
  if (outcome.status === 'completed') {
    print(`${color.green('completed')} in ${outcome.turns} turns, ${outcome.steps} steps`)
  } else {
    print(`${color.red(`stopped: ${outcome.error.kind}`)} after ${outcome.turns} completed turns, ${outcome.steps} steps`)
    print(color.dim('── report ──'))
    for (const line of outcome.report.text.split('\n')) print(`  ${line}`)
  }
}
