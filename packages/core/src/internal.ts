/**
 * `@shallot/core/internal`: the pieces shallot's own packages share — layers, hosts and stores — that an
 * agent author never calls: abort plumbing, canonical JSON and hashes, the text toolkit, the host
 * option helpers. They follow semver like the main entry, but the main entry (`@shallot/core`) is the
 * surface to learn; import from here only when you write a layer or a host of your own.
 *
 * @example
 * import { onAbort } from '@shallot/core/internal'
 */

export {
  APPROVAL_CHECK,
  APPROVALS_STATE_KEY,
  type ApprovalBinding,
  type ApprovalCheck,
  approvalBinding,
  approvalCheckOf,
  approvalFor,
  putApproval,
  type StoredAnswer,
} from './approvals.js'
export { type BoundedCall, boundedCall, type StoreUnavailable } from './bounded-call.js'
export { emitFresh } from './call-context.js'
export { canonicalJson, hashOf, hashOfNamed, tupleHasher } from './canonical.js'
export { type AbortSource, type EscalationPolicy, onAbort } from './channel.js'
export { callNext, isTrustedMiddleware, TRUSTED_MIDDLEWARE } from './compose.js'
export { type DeadlineQueue, deadlineQueue, type Expiring, startTimer } from './deadlines.js'
export { isMiddlewareDefinition } from './define-middleware.js'
export { invalidArguments, unknownTool } from './dispatcher.js'
export { isTransientModelError, modelFailureCode } from './model-call.js'
export { optionsParser } from './options-parser.js'
export { renderValue } from './render.js'
export { StepBudget } from './run.js'
export { describeShape, jsonSchemaOf } from './shape.js'
export {
  type HostLimits,
  maxStepsFrom,
  onlyWithoutStack,
  runBudgetRefinement,
  type StackSource,
  stackFromSource,
  stackSourceShape,
} from './stack-options-schema.js'
export { closest } from './suggest.js'
export { escapeControls } from './text/escape-controls.js'
export { formatPath } from './text/format-path.js'
export { stripInvisible } from './text/invisible.js'
export { REDACTED } from './text/redacted.js'
export { createSanitizer, type SanitizeOptions, type Sanitizer } from './text/sanitize.js'
export { stripStackFrames } from './text/strip-stack-frames.js'
export { truncate } from './text/truncate.js'
export { refineWallNow, wallNowOf, wallNowShape } from './wall-now.js'
export { withoutStackTrace } from './without-stack-trace.js'
