// The names an application uses, listed one by one: a new export of a package is a decision here, not a side effect.

export {
  type Agent,
  type AgentEvent,
  type AgentEventListener,
  type AgentLimits,
  type AgentOptions,
  type AgentScope,
  type CheckpointStore,
  createAgent,
  type HostedModelCall,
  type ModelCallHost,
  type ModelCallHostOptions,
  type ModelPrice,
  memoryCheckpoints,
  modelCallHost,
  ParkedError,
  type ParkingOutcome,
  ResumeError,
  type RunOutcome,
  type RunReport,
  type RunSnapshot,
  type RunUsage,
} from '@shallot/agent'
export { type BulkheadOptions, bulkhead } from '@shallot/bulkhead'
export {
  type BreakerStore,
  type CircuitBreakerOptions,
  circuitBreaker,
  consecutive,
  type FailurePolicy,
  memoryBreakerStore,
  sampling,
} from '@shallot/circuit-breaker'
export { type CoalesceOptions, coalesce } from '@shallot/coalesce'
export { type ContextEditingOptions, type ContextEditingStrategy, contextEditing } from '@shallot/context-editing'
export {
  type AnyTool,
  type Clock,
  compose,
  createRun,
  createStack,
  defineMiddleware,
  defineTool,
  type ErrorCategory,
  type Logger,
  LoopError,
  type LoopErrorKind,
  type Message,
  type Middleware,
  type MiddlewareDefinition,
  MiddlewareUsageError,
  type ModelAdapter,
  type ModelFinishReason,
  type ModelRequest,
  type ModelResponse,
  type ModelTool,
  type ModelUsage,
  type Next,
  OptionsError,
  type RunContext,
  type Stack,
  type StackEvent,
  type StackOptions,
  systemClock,
  type ToolCall,
  type ToolContext,
  type ToolDefinition,
  type ToolEffect,
  ToolError,
  type ToolErrorCode,
  type ToolErrorOptions,
  type ToolResult,
} from '@shallot/core'
export { classify, type ErrorClassifierOptions, errorClassifier } from '@shallot/error-classifier'
export { type FallbackOptions, fallback } from '@shallot/fallback'
export { type HedgingOptions, hedging } from '@shallot/hedging'
export {
  type IdempotencyOptions,
  type IdempotencyStore,
  idempotency,
  memoryIdempotencyStore,
} from '@shallot/idempotency'
export { type PanicCatcherOptions, panicCatcher } from '@shallot/panic-catcher'
export { memoryRateLimitStore, type RateLimitOptions, type RateLimitStore, rateLimit } from '@shallot/rate-limit'
export { type RedactOptions, type RedactStrategy, redact } from '@shallot/redact'
export {
  type Backoff,
  constant,
  decorrelatedJitter,
  equalJitter,
  exponential,
  fullJitter,
  memoryRetryBudget,
  none,
  type OnRetry,
  type RetryBudgetStore,
  type RetryOptions,
  retry,
} from '@shallot/retry'
export { type ConvergenceOptions, resetConvergence, resetStuckLoop, type StuckLoopOptions, stuckLoop } from '@shallot/stuck-loop'
export { type TimeoutOptions, timeout } from '@shallot/timeout'
export { DEFAULT_ORDER, type DefaultMiddlewareOptions, defaultMiddleware } from './default-middleware.js'
export { DEFAULT_MODEL_ORDER, type DefaultModelMiddlewareOptions, defaultModelMiddleware } from './default-model-middleware.js'
