/**
 * `@shallot/core/kit`: the author kit. Everything a middleware, host or store author needs from core
 * beyond the main entry, and exactly what shallot's own layers use: none of them imports anything
 * else, so a third-party layer can do all a built-in does. Every name is documented, with a sample
 * that runs, in docs/author-kit.md.
 * Same semver as the main entry.
 *
 * @example
 * import { optionsParser, startTimer } from '@shallot/core/kit'
 */

export {
  APPROVAL_CHECK,
  APPROVALS_STATE_KEY,
  type ApprovalBinding,
  type ApprovalCheck,
  approvalBinding,
  approvalCheckOf,
  approvalFor,
  dropApprovals,
  putApproval,
  putBound,
  type StoredAnswer,
} from './approvals.js'
export { type BoundedCall, boundedCall, type StoreUnavailable } from './bounded-call.js'
export { callListener } from './call-listener.js'
export { neverAborted, onAbort, SETTLED, SignalLink, untilAborted } from './cancellation.js'
export { canonicalJson, hashOf } from './canonical.js'
export { callNext } from './compose.js'
export { MAX_TIMER_MS, startTimer } from './deadlines.js'
export { isMiddlewareDefinition } from './define-middleware.js'
// For hosts — what a turn loop (shallot's own agent, an integration) needs to run the stack's calls
// under one run: ids, the guarded logger, a tool's JSON schema for the model.
export { newRunId } from './ids.js'
export { guardLogger, isSilent } from './logger.js'
export { describeModelFailure, isTransientModelError, modelFailureCode } from './model-failure.js'
export { optionsParser } from './options-parser.js'
export { scopeFrom, scopeProblem, scopeSchema } from './scope.js'
export { jsonSchemaOf } from './shape.js'
export { type Flight, SingleFlight } from './single-flight.js'
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
export { createSanitizer, type SanitizeOptions, type Sanitizer } from './text/sanitize.js'
export { stripStackFrames } from './text/strip-stack-frames.js'
export { truncate } from './text/truncate.js'
export { invalidArguments } from './tool-refusals.js'
export { waitMsOf } from './wait-ms.js'
export { refineWallNow, wallNowOf, wallNowShape } from './wall-now.js'
export { withoutStackTrace } from './without-stack-trace.js'
