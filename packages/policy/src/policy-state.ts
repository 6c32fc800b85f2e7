import type { Json, RunContext, ToolCall } from '@shallot/core'
import { APPROVALS_STATE_KEY, approvalBinding } from '@shallot/core/kit'

/**
 * Where the policy keeps what must survive a checkpoint, in `ctx.run.state`:
 * - `approvals[callId]`: a human's answer, put there by whoever resumes the run
 *   (`'approve'`, `'deny'`, `{ deny: reason }` or `{ args }`);
 * - `consumed[callId]`: the answer was acted on once, so the same approval never runs a call twice;
 * - `counts[ruleId]`: calls that met a `maxPerRun` rule's conditions and went through, or hold a slot while
 *   they are being decided;
 * - `asked[callId]`: the rule that stopped the run for this call (`{ turn, tool, digest, rule, fingerprint }`),
 *   so an answer given for it stands on resume only while the same rule, as configured, asks: a person who
 *   approved a call under one rule has not approved it under a stricter one.
 */
export const POLICY_STATE_KEY: typeof APPROVALS_STATE_KEY = APPROVALS_STATE_KEY

type JsonObject = { [key: string]: Json }

const isObject = (value: unknown): value is JsonObject => typeof value === 'object' && value !== null && !Array.isArray(value)

/** Sets an own property, so a key like `__proto__` (a call id is the model's text) is data, never the prototype. */
function put(target: JsonObject, key: string, value: Json): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true })
}

function own(target: JsonObject, key: string): Json | undefined {
  return Object.hasOwn(target, key) ? target[key] : undefined
}

/** The policy's slot of the run state, repaired when a snapshot holds something else there. */
type Field = 'approvals' | 'consumed' | 'counts' | 'asked'

function slot(run: RunContext, field: Field): JsonObject {
  let root = own(run.state, POLICY_STATE_KEY)
  if (!isObject(root)) {
    root = {}
    put(run.state, POLICY_STATE_KEY, root)
  }
  let inner = own(root, field)
  if (!isObject(inner)) {
    inner = {}
    put(root, field, inner)
  }
  return inner
}

const peek = (run: RunContext, field: Field, key: string): Json | undefined => {
  const root = own(run.state, POLICY_STATE_KEY)
  if (!isObject(root)) return undefined
  const inner = own(root, field)
  return isObject(inner) ? own(inner, key) : undefined
}

/** The human's answer for a call, as the run state holds it (not yet validated). */
export const storedApproval = (run: RunContext, callId: string): Json | undefined => peek(run, 'approvals', callId)

/** How the answer for a call was used, if it was: `{ turn, as }`. */
export const consumedAs = (run: RunContext, callId: string): Json | undefined => peek(run, 'consumed', callId)

/** Records that the answer for a call was acted on. Written before the call goes inward, so a late crash cannot undo it in memory. */
export function markConsumed(run: RunContext, callId: string, as: 'approve' | 'deny' | 'edit'): void {
  put(slot(run, 'consumed'), callId, { turn: run.turn, as })
  // The answer is spent: a later turn whose model reuses the id is asked afresh.
  const approvals = slot(run, 'approvals')
  if (Object.hasOwn(approvals, callId)) delete approvals[callId]
  forget(run, 'asked', callId)
}

function forget(run: RunContext, field: Field, callId: string): void {
  const root = own(run.state, POLICY_STATE_KEY)
  const inner = isObject(root) ? own(root, field) : undefined
  if (isObject(inner) && Object.hasOwn(inner, callId)) delete inner[callId]
}

/** Removes the answer for a call that no longer approves it (the policy changed since): a resume without a new answer asks again. */
export const dropAnswer = (run: RunContext, callId: string): void => forget(run, 'approvals', callId)

const RULE_ID = /^[A-Za-z0-9_.-]{1,64}$/

/** The rule that asked for a person's answer to this call, as recorded when the run stopped for it. */
export interface AskedBy {
  readonly rule: string
  readonly fingerprint: string
}

/** Records which rule, as configured, stops the run for this call: written with the stop, so it is in the checkpoint the answer resumes. */
export function recordAsked(run: RunContext, call: ToolCall, rule: AskedBy): void {
  const { turn, tool, digest } = approvalBinding(call, run.turn)
  put(slot(run, 'asked'), call.id, { turn, tool, digest, rule: rule.rule, fingerprint: rule.fingerprint })
}

/**
 * The rule that asked about this very call (same turn, tool and arguments), or undefined when no
 * stop recorded one for it: an answer put in by a host (`putApproval`) or a checkpoint written
 * before stops recorded their rule. A record that is not a well-formed one for this call is `unreadable`.
 */
export function askedFor(run: RunContext, call: ToolCall): AskedBy | 'unreadable' | undefined {
  const record = peek(run, 'asked', call.id)
  if (record === undefined) return undefined
  if (!isObject(record)) return 'unreadable'
  const { turn, tool, digest, rule, fingerprint } = record
  const binding = approvalBinding(call, run.turn)
  if (turn !== binding.turn || tool !== binding.tool || digest !== binding.digest) return undefined
  // The rule's id is shown to the person asked again: only an id a rule could have (a planted 1 MB one is unreadable).
  return typeof rule === 'string' && RULE_ID.test(rule) && typeof fingerprint === 'string' ? { rule, fingerprint } : 'unreadable'
}

/** Calls counted against a `maxPerRun` rule so far (a corrupt count reads as the limit reached: fail closed). */
export function countOf(run: RunContext, ruleId: string): number {
  const value = peek(run, 'counts', ruleId)
  if (value === undefined) return 0
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 ? value : Number.POSITIVE_INFINITY
}

/**
 * Takes one of a `maxPerRun` rule's slots when one is free: reads and writes the count with no
 * await between, so calls in parallel never both see the last free slot. False when the count is
 * at `max` (or corrupt), and nothing is written.
 */
export function takeCount(run: RunContext, ruleId: string, max: number): boolean {
  const current = countOf(run, ruleId)
  if (current >= max) return false
  put(slot(run, 'counts'), ruleId, current + 1)
  return true
}

/** Gives back a slot {@link takeCount} took, for a call refused before it went inward. A count that is no longer one is left as it is. */
export function releaseCount(run: RunContext, ruleId: string): void {
  const current = countOf(run, ruleId)
  if (Number.isFinite(current) && current > 0) put(slot(run, 'counts'), ruleId, current - 1)
}
