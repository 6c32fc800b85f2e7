import { truncate } from './text/truncate.js'
import { waitMsOf } from './wait-ms.js'

/** How a soft failure should be treated by the layers above it. */
export type ErrorCategory = 'transient' | 'recoverable' | 'user' | 'fatal'

/** Stable snake_case codes that shallot produces. The set is open: any snake_case string is allowed. */
export type ToolErrorCode =
  | 'timeout'
  | 'rate_limited'
  | 'upstream_error'
  | 'network_error'
  | 'invalid_arguments'
  | 'not_found'
  | 'unknown_tool'
  | 'permission_denied'
  | 'auth_required'
  | 'conflict'
  | 'circuit_open'
  | 'repeated_failure'
  | 'tool_panic'
  | 'cancelled'
  | 'outcome_unknown'
  | 'idempotency_mismatch'
  | 'store_unavailable'
  | (string & {})

export interface ToolErrorOptions {
  category?: ErrorCategory
  hint?: string
  retryable?: boolean
  safeToRepeat?: boolean
  /** Server pushback in milliseconds: a finite number, 0 or more; anything else is dropped (and logged by the stack). */
  retryAfterMs?: number
  cause?: unknown
  /** Extra structured facts for logs and reports; never shown to the model unless a renderer chooses to. */
  details?: Record<string, unknown>
}

/** The JSON form of a {@link ToolError}, as it appears on a {@link ToolResult}. `cause` is never included. */
export interface ToolErrorJSON {
  code: string
  category: ErrorCategory
  message: string
  hint?: string
  retryable: boolean
  safeToRepeat: boolean
  retryAfterMs?: number
}

const TOOL_ERROR = Symbol.for('shallot.ToolError')
const LOOP_ERROR = Symbol.for('shallot.LoopError')

/** Longest message a ToolError keeps; longer text is cut with the truncation marker. */
export const MAX_MESSAGE_LENGTH = 2000
/** Longest hint a ToolError keeps. */
export const MAX_HINT_LENGTH = 500

/** What a ToolError refused as its `retryAfterMs`, kept for the terminal's log line. */
const droppedValues = new WeakMap<object, { readonly value: unknown }>()

/**
 * A wait the layers can act on: a finite number of milliseconds, 0 or more. Anything else (`NaN`
 * from `Number('soon') * 1000`, `Infinity`, a negative, a string) would keep a breaker from opening
 * and tell the model to "retry in NaNs", so it is dropped here, where every ToolError is built.
 */
function checkedRetryAfter(error: object, value: unknown): number | undefined {
  if (value === undefined) return undefined
  const ms = waitMsOf(value)
  if (ms === undefined) droppedValues.set(error, { value })
  return ms
}

/** The `retryAfterMs` a ToolError was given and dropped as unusable, if any (internal: for the log line). */
export function droppedRetryAfter(error: unknown): { readonly value: unknown } | undefined {
  return typeof error === 'object' && error !== null ? droppedValues.get(error) : undefined
}

const DEFAULT_CATEGORY: Record<string, ErrorCategory> = {
  timeout: 'transient',
  rate_limited: 'transient',
  upstream_error: 'transient',
  network_error: 'transient',
  store_unavailable: 'transient',
  permission_denied: 'fatal',
  auth_required: 'user',
}

/**
 * The soft failure: it becomes a tool result with `ok: false` that the model reads on its next turn.
 * Every layer throws or rethrows this; the stack turns it into a {@link ToolResult}.
 *
 * @example
 * throw new ToolError('not_found', 'file src/mian.rs not found', { hint: 'list the directory first' })
 */
export class ToolError extends Error {
  declare readonly [TOOL_ERROR]: true
  override readonly name = 'ToolError'
  readonly code: ToolErrorCode
  readonly category: ErrorCategory
  readonly hint: string | undefined
  readonly retryable: boolean
  readonly safeToRepeat: boolean
  readonly retryAfterMs: number | undefined
  readonly details: Record<string, unknown> | undefined

  constructor(code: ToolErrorCode, message: string, options: ToolErrorOptions = {}) {
    super(truncate(String(message), MAX_MESSAGE_LENGTH), options.cause === undefined ? undefined : { cause: options.cause })
    Object.defineProperty(this, TOOL_ERROR, { value: true })
    this.code = code
    this.category = options.category ?? DEFAULT_CATEGORY[code] ?? 'recoverable'
    this.hint = options.hint === undefined ? undefined : truncate(String(options.hint), MAX_HINT_LENGTH)
    this.retryable = options.retryable ?? this.category === 'transient'
    this.safeToRepeat = options.safeToRepeat ?? false
    this.retryAfterMs = checkedRetryAfter(this, options.retryAfterMs)
    this.details = options.details
  }

  /** True for a ToolError from any installed copy of `@shallot/core`. */
  static is(value: unknown): value is ToolError {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[TOOL_ERROR] === true
  }

  toJSON(): ToolErrorJSON {
    const json: ToolErrorJSON = {
      code: this.code,
      category: this.category,
      message: this.message,
      retryable: this.retryable,
      safeToRepeat: this.safeToRepeat,
    }
    if (this.hint !== undefined) json.hint = this.hint
    if (this.retryAfterMs !== undefined) json.retryAfterMs = this.retryAfterMs
    return json
  }
}

/** Why a run ended on the hard channel. */
export type LoopErrorKind =
  | 'cancelled'
  | 'loop_detected'
  | 'recovery_exhausted'
  | 'budget_exhausted'
  | 'user_input_required'
  | 'fatal'
  | 'model_failed'
  | 'tool_crashed'
  | 'context_exceeded'
  | 'fallback_exhausted'

export interface LoopErrorOptions {
  cause?: unknown
  /** Facts for the run's report: tool, fingerprint, counts, the last error. */
  details?: Record<string, unknown>
}

/**
 * The hard channel: the run ends and the caller's code receives this. Every layer rethrows it untouched.
 *
 * @example
 * throw new LoopError('loop_detected', 'read_file failed 5 times with the same arguments', { details: { tool: 'read_file' } })
 */
export class LoopError extends Error {
  declare readonly [LOOP_ERROR]: true
  override readonly name = 'LoopError'
  readonly kind: LoopErrorKind
  readonly details: Record<string, unknown>

  constructor(kind: LoopErrorKind, message: string, options: LoopErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    Object.defineProperty(this, LOOP_ERROR, { value: true })
    this.kind = kind
    this.details = options.details ?? {}
  }

  /** True for a LoopError from any installed copy of `@shallot/core`. */
  static is(value: unknown): value is LoopError {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[LOOP_ERROR] === true
  }

  /** The JSON form for logs and reports (`cause` is left out). */
  toJSON(): { name: 'LoopError'; kind: LoopErrorKind; message: string; details: Record<string, unknown> } {
    return { name: 'LoopError', kind: this.kind, message: this.message, details: this.details }
  }
}
