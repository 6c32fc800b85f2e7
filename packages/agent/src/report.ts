import type { LoopError, LoopErrorKind } from '@shallot/core'
import type { CallRecord, TurnRecord } from './checkpoints.js'

/** What a human reads when a run stops: the task, what was done, what failed, why, and what to do next. */
export interface RunReport {
  readonly runId: string
  readonly task: string
  readonly completedTurns: number
  readonly completedCalls: ReadonlyArray<CallRecord & { readonly turn: number }>
  readonly failed: { readonly kind: LoopErrorKind; readonly message: string; readonly details: Record<string, unknown> }
  readonly why: string
  readonly nextSteps: string
  /**
   * The library call `nextSteps` suggests to continue the run (`agent.resume('run-1')`, with the approvals
   * it waits for), or undefined when the next step is a new run. A host that resumes its own way (a
   * command line, a button) replaces this text in `nextSteps` with its own.
   */
  readonly resume: string | undefined
  /** The calls a run stopped for approval waits on (empty otherwise); answer them with `agent.resume(runId, { approvals })`. */
  readonly pending: readonly PendingCall[]
  /** The whole report as plain text. */
  readonly text: string
}

/** A call waiting for a person's answer, as the stop named it. */
export interface PendingCall {
  readonly callId: string
  readonly tool: string
  /** The arguments as sanitized JSON text. */
  readonly arguments: string
  /** Why it needs a person. */
  readonly reason: string
}

const text = (value: unknown): string => (typeof value === 'string' ? value : '')

/** The pending calls of a stop that waits for a person (`details.pending`), read defensively: details come from layers. */
function pendingOf(error: LoopError): PendingCall[] {
  const pending = error.details.pending
  if (error.kind !== 'user_input_required' || !Array.isArray(pending)) return []
  return pending.flatMap((entry: unknown) => {
    if (typeof entry !== 'object' || entry === null) return []
    const { callId, tool, arguments: args, reason } = entry as Record<string, unknown>
    if (typeof callId !== 'string') return []
    return [{ callId, tool: text(tool), arguments: text(args), reason: text(reason) }]
  })
}

/** The exact resume call that answers every pending call. */
function resumeCommand(runId: string, pending: readonly PendingCall[]): string {
  const answers = pending.map((p) => `${JSON.stringify(p.callId)}: 'approve' | 'deny' | { args }`).join(', ')
  return `agent.resume(${JSON.stringify(runId)}, { approvals: { ${answers} } })`
}

const WHY: Record<LoopErrorKind, string> = {
  cancelled: 'the caller cancelled the run',
  loop_detected: 'the model kept repeating a call that failed the same way, so it was not adapting',
  recovery_exhausted: 'retries of a failing call went past the hard ceiling',
  budget_exhausted: 'the run spent its whole budget',
  user_input_required: 'a tool needs something only a person can provide',
  fatal: 'a tool failed in a way no retry or rewording can fix',
  model_failed: 'the model call failed',
  tool_crashed: 'a tool threw an error that no layer turned into a soft error',
  context_exceeded: "the conversation no longer fits the model's context window",
  fallback_exhausted: 'every model in the fallback chain was unavailable',
}

function detail(error: LoopError, key: string): string {
  const value = error.details[key]
  return typeof value === 'string' || typeof value === 'number' ? String(value) : ''
}

/** The kind's reason with the failure behind it, said once when the failure already starts with it. */
const because = (base: string, failure: string) => (failure.startsWith(base) ? failure : `${base}: ${failure}`)

/**
 * A model provider's refusal that a person must fix: its adapter or classifier says so (`reason`), quoting the
 * provider when it said anything — a bare 401 with an empty body is still the credentials, not a tool.
 */
function providerRefusal(error: LoopError): 'credentials' | 'quota' | 'certificate' | undefined {
  const { reason, tool } = error.details
  if (error.kind !== 'user_input_required' || tool !== undefined) return undefined
  return reason === 'credentials' || reason === 'quota' || reason === 'certificate' ? reason : undefined
}

/** The "why": the kind's reason, and the failure behind it when the error names one. */
function whyOf(error: LoopError): string {
  const base = WHY[error.kind]
  const failure = error.details.failure
  if (typeof failure === 'string' && failure !== '') return because(base, failure)
  // No tool asked: the adapter's message names the provider and what it refused.
  if (providerRefusal(error) !== undefined) return error.message
  // An adapter's own classification (a 400, a context-length refusal) quotes the provider in its message.
  if (typeof error.details.providerMessage === 'string') return because(base, error.message)
  if (error.kind === 'budget_exhausted') {
    const limit = ['maxTokens', 'maxCostUsd', 'maxSteps', 'maxTurns'].find((key) => error.details[key] !== undefined)
    if (limit !== undefined) return `${base} (limits.${limit}): ${error.message}`
  }
  return base
}

function budgetFix(error: LoopError): string {
  // A budget that cannot count (a model without a price) names its own fix: a higher limit would not help.
  if (typeof error.details.fix === 'string') return error.details.fix
  if (error.details.maxTokens !== undefined) return 'raise limits.maxTokens'
  if (error.details.maxCostUsd !== undefined) return 'raise limits.maxCostUsd'
  if (error.details.maxTurns !== undefined) return 'raise limits.maxTurns'
  return 'raise limits.maxSteps or limits.maxTurns'
}

/** The library call that continues the run, or undefined when the next step is a new run. */
function resumeOf(error: LoopError, runId: string, pending: readonly PendingCall[]): string | undefined {
  if (error.kind === 'context_exceeded') return undefined
  return pending.length > 0 ? resumeCommand(runId, pending) : `agent.resume('${runId}')`
}

function nextSteps(error: LoopError, runId: string, pending: readonly PendingCall[]): string {
  const tool = detail(error, 'tool')
  const resume = `then resume it with ${resumeOf(error, runId, pending)}`
  switch (error.kind) {
    case 'cancelled':
      return `Nothing is broken. If the work is still wanted, ${resume}.`
    case 'loop_detected':
      return `Read the last error of ${tool || 'the repeated tool'} above. Fix the data or the tool it points at, or add guidance to the task, ${resume}.`
    case 'recovery_exhausted':
      return `Check the health of ${tool || 'the failing tool'} and its upstream service; ${resume} once it answers again.`
    case 'budget_exhausted':
      return `If the completed turns show progress, ${budgetFix(error)} (the run keeps what it spent), otherwise narrow the task; ${resume}.`
    case 'user_input_required':
      if (pending.length > 0)
        return `Decide each pending call (approve it, deny it, or approve it with edited arguments), then resume with ${resumeCommand(runId, pending)}.`
      if (providerRefusal(error) === 'credentials')
        return `Check the model provider's credentials (the API key, and its access to this model), ${resume}.`
      if (providerRefusal(error) === 'quota') return `Add credit or raise the quota at the model provider, ${resume}.`
      if (providerRefusal(error) === 'certificate')
        return `Fix the TLS trust for the model provider (the base URL, or the proxy's CA in NODE_EXTRA_CA_CERTS), ${resume}.`
      return `Provide what the tool asks for (for example credentials or a confirmation), ${resume}.`
    case 'fatal':
      return `Fix the cause outside the agent (permissions, configuration, a missing resource), ${resume}.`
    case 'model_failed':
      return `Check the model provider (status, credentials, quota), ${resume}.`
    case 'tool_crashed':
      return `Fix ${tool || 'the tool'} or add panicCatcher() to the stack so crashes reach the model as soft errors, ${resume}.`
    case 'context_exceeded':
      return `Narrow the task, use a model with a larger context window, or make tools return less text; start a new run.`
    case 'fallback_exhausted':
      return `Check the providers of every model in the chain (status, credentials, quota), ${resume}.`
  }
}

/** Builds the report of a stopped run from its committed turns and the error that stopped it. */
export function buildReport(runId: string, task: string, turns: readonly TurnRecord[], error: LoopError): RunReport {
  const completedCalls = turns.flatMap((t) => t.calls.map((c) => ({ ...c, turn: t.turn })))
  const why = whyOf(error)
  const pending = pendingOf(error)
  const steps = nextSteps(error, runId, pending)
  const lines = [
    `Run ${runId} stopped: ${error.kind}`,
    `Task: ${task}`,
    `Completed: ${turns.length} turn${turns.length === 1 ? '' : 's'}, ${completedCalls.length} tool call${completedCalls.length === 1 ? '' : 's'}`,
    ...completedCalls.map(
      (c) =>
        `  turn ${c.turn}: ${c.name} ${c.ok ? 'ok' : `failed (${c.code ?? 'error'})`}${c.attempts > 1 ? `, ${c.attempts} attempts` : ''}${c.replayed ? ', replayed' : ''}`,
    ),
    `Failed: ${error.message}`,
    ...Object.entries(error.details)
      .filter(([key]) => pending.length === 0 || key !== 'pending')
      .map(([key, value]) => `  ${key}: ${typeof value === 'string' ? value : JSON.stringify(value)}`),
    ...(pending.length === 0 ? [] : [`Pending approval: ${pending.length} call${pending.length === 1 ? '' : 's'}`]),
    ...pending.map((p) => `  ${p.callId}: ${p.tool} ${p.arguments}${p.reason === '' ? '' : ` (${p.reason})`}`),
    `Why: ${why}`,
    `Next: ${steps}`,
  ]
  return {
    runId,
    task,
    completedTurns: turns.length,
    completedCalls,
    failed: { kind: error.kind, message: error.message, details: error.details },
    why,
    nextSteps: steps,
    resume: resumeOf(error, runId, pending),
    pending,
    text: lines.join('\n'),
  }
}
