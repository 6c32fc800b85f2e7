export type { ApprovalAnswer } from './approval-binding.js'
export { abortReason } from './cancellation.js'
export { systemClock } from './clock.js'
export { compose, MiddlewareUsageError } from './compose.js'
export { defineMiddleware, type MiddlewareDefinition, type MiddlewareEnv } from './define-middleware.js'
export { defineTool, type ToolSpec } from './define-tool.js'
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
export { isLayer, type Layer, type LayerEntry, modelSideOf, toolSideOf } from './layer.js'
export { silentLogger } from './logger.js'
export type { Message, ModelAdapter, ModelFinishReason, ModelRequest, ModelResponse, ModelTool, ModelUsage } from './model.js'
export type {
  ModelCallRequest,
  ModelContext,
  ModelInfo,
  ModelMiddleware,
  ModelNext,
} from './model-context.js'
export type { ModelCircuit, ModelEvent } from './model-events.js'
export { OptionsError, parseOptions } from './options.js'
export { type ErrorRenderer, renderError } from './render.js'
export {
  isConnectionFailure,
  MAY_HAVE_TAKEN_EFFECT,
  REQUEST_FATES,
  type RequestFailure,
  type RequestFate,
  type RequestFateRow,
  requestFate,
} from './request-fate.js'
export { type CreateRunOptions, createRun, type MutableRun } from './run.js'
export {
  type CallFinishedEvent,
  type CallStartedEvent,
  createStack,
  type DispatchOptions,
  type Stack,
  type StackEvent,
  type StackLimits,
  type StackOptions,
} from './stack.js'
export { sanitize } from './text/sanitize.js'
export { TOOL_TEXT_LIMITS, toolDescription, toolInputSchema } from './text/tool-text.js'
export { overrideTools } from './tool-overrides.js'
export type {
  AnyTool,
  Budget,
  Clock,
  CompletedTurn,
  Json,
  Logger,
  Middleware,
  Next,
  ReconcileAnswer,
  RunContext,
  ToolCall,
  ToolContext,
  ToolDefinition,
  ToolEffect,
  ToolExecuteContext,
  ToolOutput,
  ToolResult,
  TraceEvent,
  TurnEnv,
} from './types.js'
export { TOOL_EFFECTS } from './types.js'
