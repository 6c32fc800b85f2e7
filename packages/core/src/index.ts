export { type Agent, type AgentLimits, type AgentOptions, createAgent, type RunOutcome } from './agent.js'
export { canonicalJson, hashOf } from './canonical.js'
export { type AbortSource, abortReason, type EscalationPolicy, onAbort } from './channel.js'
export { type CallRecord, type CheckpointStore, memoryCheckpoints, type RunSnapshot, type TurnRecord } from './checkpoints.js'
export { systemClock } from './clock.js'
export { compose, isTrustedMiddleware, MiddlewareUsageError, TRUSTED_MIDDLEWARE, trustedMiddleware } from './compose.js'
export { defineMiddleware, isMiddlewareDefinition, type MiddlewareDefinition, type MiddlewareEnv } from './define-middleware.js'
export { defineTool, type ToolSpec } from './define-tool.js'
export { invalidArguments, unknownTool } from './dispatcher.js'
export {
  type ErrorCategory,
  LoopError,
  type LoopErrorKind,
  type LoopErrorOptions,
  ToolError,
  type ToolErrorCode,
  type ToolErrorJSON,
  type ToolErrorOptions,
} from './errors.js'
export { silentLogger } from './logger.js'
export type { Message, ModelAdapter, ModelFinishReason, ModelRequest, ModelResponse, ModelTool, ModelUsage } from './model.js'
export { isTransientModelError, type ModelRetry } from './model-call.js'
export { OptionsError, parseOptions } from './options.js'
export { type ErrorRenderer, renderError, renderValue } from './render.js'
export { buildReport, type RunReport } from './report.js'
export { type CreateRunOptions, createRun, type MutableRun, StepBudget } from './run.js'
export { describeShape, jsonSchemaOf } from './shape.js'
export { createStack, type DispatchOptions, type Stack, type StackEvent, type StackLimits, type StackOptions } from './stack.js'
export { onlyWithoutStack, stackSourceShape } from './stack-options-schema.js'
export { closest } from './suggest.js'
export { formatPath } from './text/format-path.js'
export { stripInvisible } from './text/invisible.js'
export { REDACTED } from './text/redacted.js'
export { createSanitizer, type SanitizeOptions, type Sanitizer, sanitize } from './text/sanitize.js'
export { stripStackFrames } from './text/strip-stack-frames.js'
export { truncate } from './text/truncate.js'
export { overrideTools } from './tool-overrides.js'
export type {
  AnyTool,
  Budget,
  Clock,
  DeferredSignal,
  Json,
  Logger,
  Middleware,
  Next,
  RunContext,
  ToolCall,
  ToolContext,
  ToolDefinition,
  ToolEffect,
  ToolExecuteContext,
  ToolOutput,
  ToolResult,
  TraceEvent,
} from './types.js'
