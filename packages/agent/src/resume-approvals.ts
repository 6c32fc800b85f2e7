import { type ApprovalAnswer, type Json, OptionsError, parseOptions } from '@shallot/core'
import { type ApprovalBinding, approvalBinding, putBound } from '@shallot/core/kit'
import { z } from 'zod'
import type { RunSnapshot } from './checkpoints.js'

const answerSchema = z.union([
  z.literal('approve'),
  z.literal('deny'),
  z.strictObject({ deny: z.string().max(1000) }),
  z.strictObject({ args: z.custom<Json>((value) => value !== undefined, { message: 'args is required: the edited arguments' }) }),
])

/** Not an array, and readable: a revoked Proxy throws when asked, and is refused like any other non-answer. */
function isPlainReadable(value: object): boolean {
  try {
    return !Array.isArray(value)
  } catch {
    return false
  }
}

const resumeSchema = z.strictObject({
  signal: z.instanceof(AbortSignal).optional(),
  // Checked key by key below: a record schema would copy the answers with assignment, and a call id is the model's text.
  approvals: z
    .custom<object>((value) => typeof value === 'object' && value !== null && isPlainReadable(value), {
      message: "expected an object of answers by call id: { [callId]: 'approve' | 'deny' | { deny } | { args } }",
    })
    .optional(),
})

/** The most an answer may weigh as JSON: as much as a call's arguments may by default. */
const MAX_ANSWER_CHARS = 256 * 1024

/**
 * The answer as plain JSON, read once: a getter, a Proxy or a value too large to copy is an
 * OptionsError here, before anything is saved, rather than a crash in the middle of the replay.
 */
function plainAnswer(callId: string, value: unknown): unknown {
  const refuse = (message: string) => new OptionsError(`agent.resume(): approvals["${callId}"]`, [{ path: '', message }])
  let text: string | undefined
  try {
    text = JSON.stringify(value)
  } catch (err) {
    throw refuse(`the answer cannot be read as JSON (${err instanceof Error ? err.message : String(err)})`)
  }
  if (text === undefined) return null
  if (text.length > MAX_ANSWER_CHARS)
    throw refuse(`the answer is over ${MAX_ANSWER_CHARS} characters as JSON; send smaller edited arguments`)
  return JSON.parse(text)
}

/** The resume options, validated: a bad answer is an OptionsError naming the call id and what is allowed. */
export function resumeOptions(input: unknown): { signal?: AbortSignal; approvals?: ReadonlyMap<string, ApprovalAnswer> } {
  let options: z.output<typeof resumeSchema>
  try {
    options = parseOptions('agent.resume()', resumeSchema, input)
  } catch (err) {
    if (err instanceof OptionsError) throw err
    throw new OptionsError('agent.resume()', [
      { path: '', message: 'the options cannot be read (a revoked Proxy, or a getter that throws)' },
    ])
  }
  const { signal, approvals } = options
  if (approvals === undefined) return signal === undefined ? {} : { signal }
  const answers = new Map<string, ApprovalAnswer>()
  let callIds: string[]
  try {
    callIds = Object.keys(approvals)
  } catch {
    throw new OptionsError('agent.resume()', [{ path: 'approvals', message: 'the answers cannot be read (a revoked Proxy?)' }])
  }
  for (const callId of callIds) {
    const value = plainAnswer(callId, (approvals as Record<string, unknown>)[callId])
    const answer = parseOptions(`agent.resume(): approvals["${callId}"]`, answerSchema, value)
    answers.set(callId, answer as ApprovalAnswer)
  }
  return signal === undefined ? { approvals: answers } : { signal, approvals: answers }
}

const isObject = (value: unknown): value is Record<string, Json> => typeof value === 'object' && value !== null && !Array.isArray(value)

/**
 * What an answer to a pending entry binds to: a call of the turn by its own arguments; a call made
 * inside one (a fallback tool, say: the entry names the turn's call in `turnCallId`) by the tool and
 * digest its entry records. Undefined: the entry cannot be bound.
 */
function bindingOfEntry(pendingTurn: NonNullable<RunSnapshot['pendingTurn']>, entry: Record<string, Json>): ApprovalBinding | undefined {
  const { callId, turnCallId, tool, digest } = entry
  if (turnCallId === undefined || turnCallId === callId) {
    const call = pendingTurn.response.toolCalls.find((c) => c.id === callId)
    return call === undefined ? undefined : approvalBinding(call, pendingTurn.turn)
  }
  return typeof tool === 'string' && typeof digest === 'string' ? { turn: pendingTurn.turn, tool, digest } : undefined
}

/**
 * The snapshot with the answers in its run state, each bound to the pending call it answers (turn,
 * tool, arguments), after checking each answers a pending call of the stopped turn. Answers to
 * calls already answered are replaced: the latest word counts.
 */
export function withApprovals(snapshot: RunSnapshot, answers: ReadonlyMap<string, ApprovalAnswer>): RunSnapshot {
  if (answers.size === 0) return snapshot
  const { runId, pendingTurn } = snapshot
  const entries = new Map<string, Record<string, Json>>()
  for (const entry of pendingTurn?.pending ?? [])
    if (isObject(entry) && typeof entry.callId === 'string' && !entries.has(entry.callId)) entries.set(entry.callId, entry)
  const pendingIds = [...entries.keys()]
  const state: Record<string, Json> = JSON.parse(JSON.stringify(snapshot.state))
  for (const [callId, answer] of answers) {
    const entry = entries.get(callId)
    if (entry === undefined || pendingTurn === undefined)
      throw new TypeError(
        pendingIds.length === 0
          ? `agent.resume(): run "${runId}" waits for no approval, so approvals["${callId}"] answers nothing; resume it without approvals`
          : `agent.resume(): call "${callId}" is not pending in run "${runId}"; pending: ${pendingIds.map((id) => `"${id}"`).join(', ')}`,
      )
    const binding = bindingOfEntry(pendingTurn, entry)
    if (binding === undefined)
      throw new TypeError(
        `agent.resume(): the pending call "${callId}" of run "${runId}" does not say which call it is (its tool and the digest of its arguments), so no answer can be bound to it; resume without approvals to have it asked again`,
      )
    putBound(state, callId, answer, binding)
  }
  return { ...snapshot, state }
}
