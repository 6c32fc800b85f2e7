import { abortReason, type Json, type ToolContext } from '@shallot/core'
import { startTimer } from '@shallot/core/internal'
import { z } from 'zod'

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
