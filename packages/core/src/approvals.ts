import { z } from 'zod'
import type { RunSnapshot } from './checkpoints.js'
import { parseOptions } from './options.js'
import type { AnyTool, Json, RunContext, ToolCall } from './types.js'

/**
 * Where a person's answers to pending calls live in the run state:
 * `state[APPROVALS_STATE_KEY].approvals[callId]`. `agent.resume(runId, { approvals })` writes
 * them there; the policy layer (`@shallot/policy`) reads them, so the stack, the agent and every
 * integration share the one channel.
 *
 * @example
 * createRun({ state: { [APPROVALS_STATE_KEY]: { approvals: { call_9: 'approve' } } } })
 */
export const APPROVALS_STATE_KEY = 'shallot.policy'

/**
 * Whether a layer will stop this call for a person's answer, asked before it runs. The policy
 * layer carries one under {@link APPROVAL_CHECK}; integrations whose framework decides approval
 * before it runs a tool (the AI SDK's and the OpenAI Agents SDK's `needsApproval`) ask it, so the
 * framework's own approval step fires for exactly the calls the layer would stop.
 */
export type ApprovalCheck = (call: ToolCall, run: RunContext, tool: AnyTool) => Promise<boolean>

/**
 * The property of a middleware that holds its {@link ApprovalCheck}.
 *
 * @example
 * const check = approvalCheckOf([panicCatcher(), policy({ rules })])
 * if (check !== undefined && (await check(call, run, tool))) askThePerson(call)
 */
export const APPROVAL_CHECK: unique symbol = Symbol.for('shallot.approvalCheck')

/** The approval checks of the layers given (a middleware or a list, as a host's `middleware` option takes), as one; none: undefined. */
export function approvalCheckOf(middleware: unknown): ApprovalCheck | undefined {
  const layers: unknown[] = Array.isArray(middleware) ? middleware.flat(4) : [middleware]
  const checks = layers.flatMap((layer) => {
    const check = typeof layer === 'function' ? (layer as { [APPROVAL_CHECK]?: unknown })[APPROVAL_CHECK] : undefined
    return typeof check === 'function' ? [check as ApprovalCheck] : []
  })
  if (checks.length === 0) return undefined
  return async (call, run, tool) => {
    for (const check of checks) if (await check(call, run, tool)) return true
    return false
  }
}

/**
 * Puts a person's answer where the policy reads it, `run.state[APPROVALS_STATE_KEY].approvals[callId]`,
 * as own properties (a call id is the model's text). For integrations that learn the answer from
 * their framework's approval step.
 *
 * @example
 * putApproval(run, 'call_9', 'approve')
 */
export function putApproval(run: RunContext, callId: string, answer: ApprovalAnswer): void {
  const state = run.state
  const root = isObject(state[APPROVALS_STATE_KEY]) ? (state[APPROVALS_STATE_KEY] as JsonObject) : {}
  const approvals = isObject(root.approvals) ? root.approvals : {}
  put(approvals, callId, answer)
  put(root, 'approvals', approvals)
  put(state, APPROVALS_STATE_KEY, root)
}

/** A person's answer to one pending call: run it, refuse it (optionally saying why), or run it with edited arguments. */
export type ApprovalAnswer = 'approve' | 'deny' | { readonly deny: string } | { readonly args: Json }

const answerSchema = z.union([
  z.literal('approve'),
  z.literal('deny'),
  z.strictObject({ deny: z.string().max(1000) }),
  z.strictObject({ args: z.custom<Json>((value) => value !== undefined, { message: 'args is required: the edited arguments' }) }),
])

const resumeSchema = z.strictObject({
  signal: z.instanceof(AbortSignal).optional(),
  // Checked key by key below: a record schema would copy the answers with assignment, and a call id is the model's text.
  approvals: z
    .custom<object>((value) => typeof value === 'object' && value !== null && !Array.isArray(value), {
      message: "expected an object of answers by call id: { [callId]: 'approve' | 'deny' | { deny } | { args } }",
    })
    .optional(),
})

type JsonObject = { [key: string]: Json }

const isObject = (value: unknown): value is JsonObject => typeof value === 'object' && value !== null && !Array.isArray(value)

/** Sets an own property, so a call id like `__proto__` is data, never the prototype. */
function put(target: object, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true })
}

/** The resume options, validated: a bad answer is an OptionsError naming the call id and what is allowed. */
export function resumeOptions(input: unknown): { signal?: AbortSignal; approvals?: ReadonlyMap<string, ApprovalAnswer> } {
  const { signal, approvals } = parseOptions('agent.resume()', resumeSchema, input)
  if (approvals === undefined) return signal === undefined ? {} : { signal }
  const answers = new Map<string, ApprovalAnswer>()
  for (const callId of Object.keys(approvals)) {
    const value = (approvals as Record<string, unknown>)[callId]
    const answer = parseOptions(`agent.resume(): approvals["${callId}"]`, answerSchema, value === undefined ? null : value)
    answers.set(callId, answer as ApprovalAnswer)
  }
  return signal === undefined ? { approvals: answers } : { signal, approvals: answers }
}

const pendingIdOf = (entry: Json): string | undefined => (isObject(entry) && typeof entry.callId === 'string' ? entry.callId : undefined)

/**
 * The snapshot with the answers in its run state, after checking each answers a pending call of
 * the stopped turn. Answers to calls already answered are replaced: the latest word counts.
 */
export function withApprovals(snapshot: RunSnapshot, answers: ReadonlyMap<string, ApprovalAnswer>): RunSnapshot {
  if (answers.size === 0) return snapshot
  const { runId, pendingTurn } = snapshot
  const pendingIds = (pendingTurn?.pending ?? []).flatMap((entry) => pendingIdOf(entry) ?? [])
  for (const callId of answers.keys()) {
    if (pendingIds.includes(callId)) continue
    throw new TypeError(
      pendingIds.length === 0
        ? `agent.resume(): run "${runId}" waits for no approval, so approvals["${callId}"] answers nothing; resume it without approvals`
        : `agent.resume(): call "${callId}" is not pending in run "${runId}"; pending: ${pendingIds.map((id) => `"${id}"`).join(', ')}`,
    )
  }
  const state: Record<string, Json> = { ...snapshot.state }
  const root: JsonObject = isObject(state[APPROVALS_STATE_KEY]) ? { ...(state[APPROVALS_STATE_KEY] as JsonObject) } : {}
  const approvals: JsonObject = isObject(root.approvals) ? { ...root.approvals } : {}
  for (const [callId, answer] of answers) put(approvals, callId, answer)
  put(root, 'approvals', approvals)
  put(state, APPROVALS_STATE_KEY, root)
  return { ...snapshot, state }
}
