import { isLayer } from './layer.js'
import type { AnyTool, RunContext, ToolCall } from './types.js'

export {
  APPROVALS_STATE_KEY,
  type ApprovalAnswer,
  type ApprovalBinding,
  approvalBinding,
  approvalFor,
  type BoundAnswer,
  dropApprovals,
  putApproval,
  putBound,
  type StoredAnswer,
} from './approval-binding.js'

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
    const fn = typeof layer === 'function' ? layer : isLayer(layer) ? layer.wrapToolCall : undefined
    const check = fn === undefined ? undefined : (fn as { [APPROVAL_CHECK]?: unknown })[APPROVAL_CHECK]
    return typeof check === 'function' ? [check as ApprovalCheck] : []
  })
  if (checks.length === 0) return undefined
  return async (call, run, tool) => {
    for (const check of checks) if (await check(call, run, tool)) return true
    return false
  }
}
