import { hashOf } from './canonical.js'
import type { Json, RunContext, ToolCall } from './types.js'

/**
 * Where a person's answers to pending calls live in the run state:
 * `state[APPROVALS_STATE_KEY].approvals[callId]`, each one bound to the call it answers
 * ({@link BoundAnswer}). `agent.resume(runId, { approvals })` and {@link putApproval} write them;
 * the policy layer (`@shallot/policy`) reads them with {@link approvalFor}, so the stack, the agent
 * and every integration share the one channel.
 *
 * @example
 * const run = createRun()
 * putApproval(run, call, 'approve') // state['shallot.policy'].approvals[call.id]
 */
export const APPROVALS_STATE_KEY = 'shallot.policy'

/** A person's answer to one pending call: run it, refuse it (optionally saying why), or run it with edited arguments. */
export type ApprovalAnswer = 'approve' | 'deny' | { readonly deny: string } | { readonly args: Json }

/**
 * What an answer answers: the turn the call was made in, its tool, and the digest of its arguments
 * as the model sent them (canonical JSON: key order and whitespace do not count). Two calls with one
 * id and other arguments, another tool or another turn are different calls.
 */
export interface ApprovalBinding {
  readonly turn: number
  readonly tool: string
  readonly digest: string
}

/** An answer as the run state holds it: the answer and the call it is bound to. */
export interface BoundAnswer extends ApprovalBinding {
  readonly answer: Json
}

type JsonObject = { [key: string]: Json }

const isObject = (value: unknown): value is JsonObject => typeof value === 'object' && value !== null && !Array.isArray(value)

/** Sets an own property, so a call id like `__proto__` is data, never the prototype. */
export function put(target: object, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true })
}

const own = (target: JsonObject, key: string): Json | undefined => (Object.hasOwn(target, key) ? target[key] : undefined)

/**
 * The binding of a call made in `turn`: what an answer to it must name to be acted on.
 *
 * @example
 * approvalBinding({ id: 'c1', name: 'transfer', args: { to: 'bob' } }, 1) // { turn: 1, tool: 'transfer', digest: '…' }
 */
export function approvalBinding(call: Pick<ToolCall, 'name' | 'args'>, turn: number): ApprovalBinding {
  return { turn, tool: call.name, digest: hashOf([call.name, asDispatched(call.args)]) }
}

/**
 * The arguments as the stack's guard (`guardArgs`) hands them to the layers: JSON text parsed, none
 * as `{}`. A model adapter may send either form; an answer bound to one must match the other.
 */
function asDispatched(args: unknown): unknown {
  if (typeof args === 'string') {
    const text = args.trim()
    if (text === '') return {}
    try {
      return JSON.parse(text) ?? {}
    } catch {
      return args
    }
  }
  return args ?? {}
}

/** The answers object of a run state, made (as own properties) when `create` and absent. */
function answersOf(state: Record<string, Json>, create: boolean): JsonObject | undefined {
  let root = own(state, APPROVALS_STATE_KEY)
  if (!isObject(root)) {
    if (!create) return undefined
    root = {}
    put(state, APPROVALS_STATE_KEY, root)
  }
  let approvals = own(root, 'approvals')
  if (!isObject(approvals)) {
    if (!create) return undefined
    approvals = {}
    put(root, 'approvals', approvals)
  }
  return approvals
}

/** Writes `answer` for call `callId` into a run state, bound to `binding`. */
export function putBound(state: Record<string, Json>, callId: string, answer: ApprovalAnswer, binding: ApprovalBinding): void {
  const record: BoundAnswer = { answer: answer as Json, turn: binding.turn, tool: binding.tool, digest: binding.digest }
  put(answersOf(state, true) as JsonObject, callId, record)
}

/**
 * Puts a person's answer to `call` where the policy reads it, bound to the call (its tool and
 * arguments) and the run's current turn: it answers that call and no other, whatever id a later
 * call carries. For hosts and integrations that learn the answer outside `agent.resume`.
 *
 * @example
 * putApproval(run, { id: 'call_9', name: 'transfer', args: { to: 'bob', amountCents: 50_000 } }, 'approve')
 */
export function putApproval(run: RunContext, call: ToolCall, answer: ApprovalAnswer): void {
  putBound(run.state, call.id, answer, approvalBinding(call, run.turn))
}

/** What the run state holds for a call: its answer, bound to it; an answer bound to another call (or to none); or nothing. */
export type StoredAnswer = { readonly answer: Json } | { readonly stale: true } | undefined

/**
 * The answer for `call` in the run's state, honoured only when it is bound to this exact call: the
 * same turn, tool and arguments. An answer for the id that names another call (the model reused the
 * id, the turn it answered was dropped, or it was written by id alone) is `stale` and approves nothing.
 *
 * @example
 * const stored = approvalFor(ctx.run, ctx.call)
 * if (stored !== undefined && 'answer' in stored) act(stored.answer)
 */
export function approvalFor(run: RunContext, call: ToolCall): StoredAnswer {
  const approvals = answersOf(run.state, false)
  const record = approvals === undefined ? undefined : own(approvals, call.id)
  if (record === undefined) return undefined
  if (!isObject(record) || !Object.hasOwn(record, 'answer')) return { stale: true }
  const { turn, tool, digest } = record
  if (turn !== run.turn || tool !== call.name || typeof digest !== 'string') return { stale: true }
  return digest === approvalBinding(call, run.turn).digest ? { answer: record.answer as Json } : { stale: true }
}

/**
 * Removes every answer from a run state, in place: done with the checkpoint that drops or completes
 * the turn they answered, so no answer outlives the call it was given for.
 */
export function dropApprovals(state: Record<string, Json>): void {
  const root = own(state, APPROVALS_STATE_KEY)
  if (isObject(root) && Object.hasOwn(root, 'approvals')) delete root.approvals
}
