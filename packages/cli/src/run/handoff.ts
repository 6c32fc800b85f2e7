import type { ParkingOutcome } from '@shallot/agent'
import type { Message } from '@shallot/core'
import { sanitize } from '@shallot/core'
import { waiterOf } from './park.js'

/** Options of {@link handoffOf}. */
export interface HandoffOptions {
  /**
   * The command that continues the run, already quoted for a shell (`shallot resume …`, or your own
   * queue's). Default: the library call the report names (`agent.resume('run-1')`), if any.
   */
  readonly resumeCommand?: string
  /** Redacted wherever they appear, beside the built-in patterns (API keys, tokens, passwords in URLs). */
  readonly secrets?: readonly (string | RegExp)[]
}

/** The most any one quoted text takes: a task, an error, a step's arguments; a longer one is cut with a marker. */
export const HANDOFF_LIMITS = { task: 4000, error: 1000, args: 200, steps: 50, blockers: 10 } as const

// C1 controls (0x80-0x9f, which some terminals read as escapes) are not in core's sanitizer: error text keeps them.
const C1 = /[\u0080-\u009f]/g
// What `cat` would run and Markdown would read as markup in a line of prose; each is shown with a backslash.
const MARKUP = /[\\`*_[\]<>|~&#!]/g

type Clean = (text: string, max: number) => string

/** Text shown as an indented code block: Markdown and HTML inside it are shown, never rendered. */
function block(clean: Clean, text: string, max: number): string {
  return clean(text, max)
    .split(/\r\n|\r|\n/)
    .map((line) => `    ${line.replace(/\t/g, '  ')}`.trimEnd())
    .join('\n')
}

/** Text inside a line of prose: one line, every markup character escaped. */
function inline(clean: Clean, text: string, max: number): string {
  return clean(text, max)
    .replace(/\s+/g, ' ')
    .trim()
    .replace(MARKUP, (c) => `\\${c}`)
}

/** A command for a shell, in a code block as given: only a character that would drive a terminal is shown as its escape. */
function commandBlock(command: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: showing control characters as text is the point
  const shown = command.replace(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g, (c) => {
    const code = c.codePointAt(0) as number
    return code < 0x80 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`
  })
  return shown
    .split('\n')
    .map((line) => `    ${line}`)
    .join('\n')
}

type ToolMessage = Extract<Message, { role: 'tool' }>

/** Every tool call of the completed turns, with its turn and its result. */
function stepsOf(transcript: readonly Message[]): Array<{ turn: number; name: string; args: unknown; result?: ToolMessage }> {
  const results = new Map<string, ToolMessage>()
  for (const m of transcript) if (m.role === 'tool') results.set(m.callId, m)
  const steps: Array<{ turn: number; name: string; args: unknown; result?: ToolMessage }> = []
  let turn = 0
  for (const m of transcript) {
    if (m.role !== 'assistant') continue
    turn++
    for (const call of m.toolCalls) {
      const result = results.get(call.id)
      steps.push(result === undefined ? { turn, name: call.name, args: call.args } : { turn, name: call.name, args: call.args, result })
    }
  }
  return steps
}

function json(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value)
  } catch {
    return String(value)
  }
}

function doneSection(clean: Clean, outcome: ParkingOutcome): string[] {
  const steps = stepsOf(outcome.transcript)
  const spent = `${outcome.turns} turn${outcome.turns === 1 ? '' : 's'} completed, ${outcome.steps} step${outcome.steps === 1 ? '' : 's'} spent.`
  if (steps.length === 0) return ['## Steps completed', '', `${spent} No tool call completed.`]
  const shown = steps.slice(-HANDOFF_LIMITS.steps)
  const lines = shown.map((s) => {
    const how = s.result === undefined ? 'no result' : s.result.ok ? 'ok' : 'failed'
    return `turn ${s.turn}  ${s.name} ${clean(json(s.args), HANDOFF_LIMITS.args)}  ${how}`
  })
  const earlier = steps.length - shown.length
  return [
    '## Steps completed',
    '',
    `${spent}${earlier > 0 ? ` The ${earlier} earliest calls are left out; the last ${shown.length}:` : ''}`,
    '',
    block(clean, lines.join('\n'), Number.POSITIVE_INFINITY),
  ]
}

function pendingSection(clean: Clean, outcome: ParkingOutcome): string[] {
  const next = outcome.turns + 1
  if (outcome.status === 'completed') return []
  if (outcome.status === 'parked') {
    const { reason } = outcome
    const until = `waits until ${new Date(outcome.wakeAt).toISOString()} (${reason.code}, ${reason.waitMs} ms)`
    const text =
      'model' in reason
        ? `turn ${next}: the model call to ${reason.model} ${until}; the model is asked for the turn again`
        : `turn ${next}: the call ${reason.callId} to ${reason.tool} ${until}; the turn's other calls are kept and not made again`
    return ['## Pending step', '', block(clean, text, HANDOFF_LIMITS.error)]
  }
  const { pending } = outcome.report
  if (pending.length > 0) {
    const calls = pending.map((p) => `${p.callId}  ${p.tool} ${p.arguments}${p.reason === '' ? '' : `\n    waits for: ${p.reason}`}`)
    return [
      '## Pending step',
      '',
      `Turn ${next}: ${pending.length} call${pending.length === 1 ? '' : 's'} wait${pending.length === 1 ? 's' : ''} for a person's answer (approve, deny, or approve with edited arguments):`,
      '',
      block(clean, calls.join('\n'), HANDOFF_LIMITS.error * pending.length),
    ]
  }
  const tool = outcome.error.details.tool
  const at = typeof tool === 'string' && tool !== '' ? ` (it stopped at a call to ${inline(clean, tool, 128)})` : ''
  return [
    '## Pending step',
    '',
    `Turn ${next} did not complete${at}; resumed, the run asks the model for it again. Why it stopped:`,
    '',
    block(clean, outcome.report.why, HANDOFF_LIMITS.error),
  ]
}

function blockersSection(clean: Clean, outcome: ParkingOutcome): string[] {
  const lines: string[] = ['## Blockers']
  if (outcome.status === 'stopped') {
    const { error } = outcome
    const failure =
      typeof error.details.failure === 'string' && !error.message.includes(error.details.failure) ? `\n${error.details.failure}` : ''
    lines.push('', `The stop, ${inline(clean, error.kind, 64)}:`, '', block(clean, `${error.message}${failure}`, HANDOFF_LIMITS.error))
  } else if (outcome.status === 'parked') {
    lines.push('', `The wait: ${inline(clean, waiterOf(outcome.reason, false), 128)} answered ${inline(clean, outcome.reason.code, 64)}.`)
  }
  // Each tool whose latest result in the completed turns is a failure, with what it said last.
  const last = new Map<string, ToolMessage>()
  for (const m of outcome.transcript) if (m.role === 'tool') last.set(m.name, m)
  const failing = [...last.values()].filter((m) => !m.ok)
  for (const m of failing.slice(-HANDOFF_LIMITS.blockers))
    lines.push('', `The last error of ${inline(clean, m.name, 128)}:`, '', block(clean, m.content, HANDOFF_LIMITS.error))
  if (failing.length > HANDOFF_LIMITS.blockers) lines.push('', `(${failing.length - HANDOFF_LIMITS.blockers} more failing tools left out.)`)
  return lines.length === 1 ? [] : lines
}

function continueSection(clean: Clean, outcome: ParkingOutcome, resumeCommand: string | undefined): string[] {
  if (outcome.status === 'completed') return ['## Answer', '', block(clean, outcome.output, HANDOFF_LIMITS.task)]
  const lines = ['## To continue', '']
  if (outcome.status === 'parked') lines.push(`Resume at or after ${new Date(outcome.wakeAt).toISOString()}:`, '')
  else lines.push(`Next: ${inline(clean, outcome.report.nextSteps, HANDOFF_LIMITS.error)}`, '')
  const command = resumeCommand ?? (outcome.status === 'stopped' ? outcome.report.resume : `agent.resume(${JSON.stringify(outcome.runId)})`)
  if (command === undefined) lines.push('This run is not resumed: start a new one.')
  else lines.push(...(outcome.status === 'parked' ? [] : ['The command:', '']), commandBlock(command))
  return lines
}

/**
 * The handoff of a run that needs a person, as Markdown a person reads with `cat` or on a web page:
 * the task, the steps completed, the pending step, the blockers with their last errors, and the
 * command that continues the run. `shallot run --checkpoints F` writes it beside F for a stopped
 * run. Everything the task, the model or a tool wrote is quoted in indented code blocks (or escaped
 * in a line of prose), so Markdown, HTML, backticks and newlines in it are shown, never rendered;
 * control and invisible characters are removed, secrets redacted as the stack redacts what a model
 * reads, and each text cut at {@link HANDOFF_LIMITS}. A completed run's handoff is its answer.
 *
 * @example
 * const outcome = await agent.run({ runId: 'refund-7', input: 'Refund order 7' })
 * if (outcome.status !== 'completed') await writeFile('refund-7.handoff.md', handoffOf(outcome, { resumeCommand: 'node resume.js refund-7' }))
 */
export function handoffOf(outcome: ParkingOutcome, options: HandoffOptions = {}): string {
  const secrets = [...(options.secrets ?? [])]
  const clean: Clean = (text, max) => sanitize(String(text), { secrets, maxLength: max }).replace(C1, '')
  const task = outcome.transcript.find((m) => m.role === 'user')?.content ?? ''
  const state =
    outcome.status === 'stopped'
      ? `stopped (${outcome.error.kind})`
      : outcome.status === 'parked'
        ? `parked until ${new Date(outcome.wakeAt).toISOString()}`
        : 'completed'
  const sections = [
    [`# Handoff: run ${inline(clean, outcome.runId, 128)}, ${inline(clean, state, 128)}`],
    ['## Task', '', block(clean, task, HANDOFF_LIMITS.task)],
    doneSection(clean, outcome),
    pendingSection(clean, outcome),
    blockersSection(clean, outcome),
    continueSection(clean, outcome, options.resumeCommand),
  ]
  return `${sections
    .filter((s) => s.length > 0)
    .map((s) => s.join('\n'))
    .join('\n\n')}\n`
}
