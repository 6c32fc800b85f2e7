import { abortReason, type Json, type RunContext, type ToolCall, type ToolContext } from '@shallot/core'
import { approvalBinding, approvalFor, startTimer } from '@shallot/core/kit'
import { z } from 'zod'
import { plainCopy } from './plain-args.js'

/**
 * A human's answer to one pending call: run it, refuse it (optionally saying why), or run it with
 * edited arguments (validated with the tool's schema like any call).
 *
 * @example
 * approvalDecisionSchema.parse({ deny: 'not this month' })
 */
export const approvalDecisionSchema = z.union([
  z.literal('approve'),
  z.literal('deny'),
  z.strictObject({ deny: z.string().max(1000) }),
  z.strictObject({ args: z.unknown() }),
])

export type ApprovalDecision = 'approve' | 'deny' | { deny: string } | { args: unknown }

/** What `onApproval` is asked. */
export interface ApprovalRequest {
  readonly runId: string
  readonly turn: number
  readonly callId: string
  readonly tool: string
  /** The arguments as the model sent them (guarded by the stack: bounded, no prototype keys). */
  readonly args: unknown
  /** The same, as sanitized canonical JSON for display. */
  readonly arguments: string
  /** Why approval is needed: the rule's reason. */
  readonly reason: string
  readonly rule: string
  /** Aborts when the answer is no longer wanted: the timeout passed or the run was cancelled. */
  readonly signal: AbortSignal
}

export type OnApproval = (request: ApprovalRequest) => ApprovalDecision | Promise<ApprovalDecision>

const NO_ANSWER = Symbol('no answer')

/** Why an in-process ask produced no usable answer (branded, so no answer a callback returns can pose as one). */
export type NoAnswer = { readonly [NO_ANSWER]: 'timeout' } | { readonly [NO_ANSWER]: 'failed'; readonly error: unknown }

const GONE = Symbol('approval no longer wanted')

/**
 * Asks `onApproval`, for at most `timeoutMs` on the call's clock. Resolves with the raw answer or
 * why there is none; rejects only when the call's signal aborts. A late answer changes nothing,
 * and no timer or listener outlives the ask.
 */
export function askInProcess(
  ctx: ToolContext,
  onApproval: OnApproval,
  request: Omit<ApprovalRequest, 'signal'>,
  timeoutMs: number,
): Promise<unknown | NoAnswer> {
  const signal = ctx.signal
  if (signal.aborted) return Promise.reject(abortReason(signal))
  return new Promise((resolve, reject) => {
    const asked = new AbortController()
    let settled = false
    const finish = (settle: () => void) => {
      if (settled) return
      settled = true
      cancelTimer()
      signal.removeEventListener('abort', onAbort)
      asked.abort(GONE)
      settle()
    }
    const onAbort = () => finish(() => reject(abortReason(signal)))
    const cancelTimer = startTimer(ctx.clock, timeoutMs, () => finish(() => resolve({ [NO_ANSWER]: 'timeout' } satisfies NoAnswer)))
    signal.addEventListener('abort', onAbort, { once: true })
    Promise.resolve()
      .then(() => onApproval({ ...request, signal: asked.signal }))
      .then(
        (answer) => finish(() => resolve(answer as Json)),
        (error: unknown) => finish(() => resolve({ [NO_ANSWER]: 'failed', error } satisfies NoAnswer)),
      )
  })
}

export const isNoAnswer = (value: unknown): value is NoAnswer =>
  typeof value === 'object' && value !== null && Object.hasOwn(value, NO_ANSWER)

/** Why there was no answer: the timeout passed, or the callback threw. */
export const whyNoAnswer = (value: NoAnswer): 'timeout' | 'failed' => value[NO_ANSWER]

/** The person's answer for this call in the run state, when it is bound to this very call (turn, tool, arguments). */
export function answerIn(run: RunContext, call: ToolCall): Json | undefined {
  const stored = approvalFor(run, call)
  return stored !== undefined && 'answer' in stored ? stored.answer : undefined
}

/** Why the answer the run state holds for this call's id does not answer this call, or undefined. */
export function staleAnswerProblem(run: RunContext, call: ToolCall): string | undefined {
  const stored = approvalFor(run, call)
  if (stored === undefined || 'answer' in stored) return undefined
  return (
    `the answer the run state holds for ${call.id} does not count: it is bound to another turn, tool or arguments, or was written ` +
    'by id alone; answer this very call with agent.resume(runId, { approvals }) or putApproval(run, call, answer)'
  )
}

/** The digest of what is approved: the call's tool and arguments as sent, as an answer to it must name. */
export const digestOf = (call: ToolCall): string => approvalBinding(call, 0).digest

/** An answer read once: a decision (edited arguments copied into plain JSON), no decision at all, or edited arguments that are refused. */
export type ReadDecision =
  | { readonly kind: 'decision'; readonly decision: ApprovalDecision }
  | { readonly kind: 'none' }
  | { readonly kind: 'refused_args'; readonly problem: string }

/**
 * Reads an answer without trusting it: a Proxy or a getter that throws makes it no decision, never
 * a crash; edited arguments are copied into plain JSON within bounds, or refused with why.
 */
export function readDecision(answer: unknown): ReadDecision {
  let parsed: z.ZodSafeParseResult<ApprovalDecision>
  try {
    parsed = approvalDecisionSchema.safeParse(answer) as z.ZodSafeParseResult<ApprovalDecision>
  } catch {
    return { kind: 'none' }
  }
  if (!parsed.success) return { kind: 'none' }
  const decision = parsed.data
  if (typeof decision !== 'object' || !('args' in decision)) return { kind: 'decision', decision }
  const copy = plainCopy(decision.args)
  return copy.ok ? { kind: 'decision', decision: { args: copy.value } } : { kind: 'refused_args', problem: copy.problem }
}
