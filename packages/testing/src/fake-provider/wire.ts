import type { FakeApi, FakeHttpFaultKind } from './types.js'

/** A reply resolved to what goes on the wire: ids filled in, arguments as strings, usage counted. */
export interface PlannedReply {
  readonly id: string
  readonly model: string
  /** Seconds, from the injected clock. */
  readonly created: number
  readonly text: string | undefined
  readonly toolCalls: ReadonlyArray<{ readonly id: string; readonly name: string; readonly arguments: string }>
  readonly finish: 'stop' | 'tool_calls' | 'length'
  readonly inputTokens: number
  readonly outputTokens: number
}

/** One server-sent event: `event:` line (when the API names its events) and the JSON `data:` (or a literal like `[DONE]`). */
export interface SseEvent {
  readonly event?: string
  readonly data: unknown
}

/** How one API spells replies and errors. */
export interface WireFormat {
  readonly api: FakeApi
  readonly path: string
  /** The id prefix of generated tool calls. */
  readonly callPrefix: string
  json(reply: PlannedReply): unknown
  events(reply: PlannedReply): SseEvent[]
  /** The status and body of an HTTP error of this kind. */
  error(kind: FakeHttpFaultKind, message: string | undefined): { status: number; body: unknown }
  /** The error event a stream carries when the server fails mid-way. */
  streamError(errorType: string | undefined, message: string | undefined, sequence: number): SseEvent
}

/** Streams split text into words and arguments into short pieces, so a client sees several deltas. */
export function textPieces(text: string): string[] {
  return text.match(/\s*\S+\s*|\s+/g) ?? []
}

export function argumentPieces(args: string): string[] {
  const pieces: string[] = []
  for (let i = 0; i < args.length; i += 12) pieces.push(args.slice(i, i + 12))
  return pieces
}

/** Anthropic sends tool input as an object; arguments that do not parse go out as the raw string (the closest the wire allows). */
export function inputOf(args: string): unknown {
  try {
    return JSON.parse(args)
  } catch {
    return args
  }
}

export const openaiErrors: Record<
  FakeHttpFaultKind,
  { status: number; type: string; code: string | null; param: string | null; message: string }
> = {
  rate_limit: {
    status: 429,
    type: 'requests',
    code: 'rate_limit_exceeded',
    param: null,
    message: 'Rate limit reached for requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 1s.',
  },
  server_error: {
    status: 500,
    type: 'server_error',
    code: null,
    param: null,
    message: 'The server had an error while processing your request. Sorry about that!',
  },
  overloaded: {
    status: 503,
    type: 'server_error',
    code: null,
    param: null,
    message: 'The engine is currently overloaded, please try again later.',
  },
  invalid_request: {
    status: 400,
    type: 'invalid_request_error',
    code: null,
    param: 'messages',
    message: "Invalid 'messages[0].role': expected one of 'system', 'user', 'assistant' or 'tool'.",
  },
  authentication: {
    status: 401,
    type: 'invalid_request_error',
    code: 'invalid_api_key',
    param: null,
    message: 'Incorrect API key provided: sk-fake***. You can find your API key at https://platform.openai.com/account/api-keys.',
  },
  permission_denied: {
    status: 403,
    type: 'invalid_request_error',
    code: 'model_not_found',
    param: null,
    message: 'You are not allowed to sample from this model.',
  },
  insufficient_quota: {
    status: 429,
    type: 'insufficient_quota',
    code: 'insufficient_quota',
    param: null,
    message: 'You exceeded your current quota, please check your plan and billing details.',
  },
  context_length_exceeded: {
    status: 400,
    type: 'invalid_request_error',
    code: 'context_length_exceeded',
    param: 'messages',
    message:
      "This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. Please reduce the length of the messages.",
  },
}

export const anthropicErrors: Record<FakeHttpFaultKind, { status: number; type: string; message: string }> = {
  rate_limit: {
    status: 429,
    type: 'rate_limit_error',
    message: 'This request would exceed the rate limit for your organization of 50 requests per minute.',
  },
  server_error: { status: 500, type: 'api_error', message: 'Internal server error' },
  overloaded: { status: 529, type: 'overloaded_error', message: 'Overloaded' },
  invalid_request: { status: 400, type: 'invalid_request_error', message: 'messages: roles must alternate between "user" and "assistant"' },
  authentication: { status: 401, type: 'authentication_error', message: 'invalid x-api-key' },
  permission_denied: {
    status: 403,
    type: 'permission_error',
    message: 'Your API key does not have permission to use the specified resource.',
  },
  insufficient_quota: {
    status: 400,
    type: 'invalid_request_error',
    message: 'Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.',
  },
  context_length_exceeded: { status: 400, type: 'invalid_request_error', message: 'prompt is too long: 201234 tokens > 200000 maximum' },
}
