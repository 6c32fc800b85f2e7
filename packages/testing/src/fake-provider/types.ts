/** The three wire formats the fake provider speaks. */
export type FakeApi = 'openai-chat' | 'openai-responses' | 'anthropic-messages'

/** A tool call the fake model makes. `args` is sent as JSON; `rawArgs` is sent verbatim (malformed JSON on purpose). */
export interface FakeToolCall {
  /** Filled in when left out: `call_<request>_<n>` (OpenAI) or `toolu_<request>_<n>` (Anthropic). */
  id?: string
  name: string
  args?: unknown
  rawArgs?: string
}

/** A normal answer: text, tool calls, or both. */
export interface FakeReply {
  text?: string
  toolCalls?: readonly FakeToolCall[]
  /** Default: `tool_calls` when there are tool calls, else `stop`; sent as each API spells it. */
  finishReason?: 'stop' | 'tool_calls' | 'length'
  /** Default: about one token per four characters of the request body and of the output. */
  usage?: { inputTokens?: number; outputTokens?: number }
  /** Extra response headers. */
  headers?: Readonly<Record<string, string>>
}

/** Faults answered with an HTTP error status and the provider's own error body. */
export type FakeHttpFaultKind =
  | 'rate_limit'
  | 'server_error'
  | 'overloaded'
  | 'invalid_request'
  | 'authentication'
  | 'permission_denied'
  | 'insufficient_quota'
  | 'context_length_exceeded'

export interface FakeHttpFault {
  fault: FakeHttpFaultKind
  /** Overrides the status (default: 429, 500, 529 Anthropic / 503 OpenAI, 400, 401, 403, 429 OpenAI / 400 Anthropic, 400). */
  status?: number
  /** Overrides the error message. */
  message?: string
  /** Sent as `retry-after` (whole or fractional seconds, as given). */
  retryAfterSeconds?: number
  /** Sent as `retry-after-ms`. */
  retryAfterMs?: number
  headers?: Readonly<Record<string, string>>
}

/** Faults of the connection or the stream; `reply` is what the stream was going to say (a short text by default). */
export interface FakeStreamFault {
  /**
   * - `reset`: the socket is destroyed before any header is sent.
   * - `reset_mid_stream`: headers and the first `after` events (JSON: half the body), then the socket is destroyed.
   * - `hang`: nothing is ever sent, until the client aborts or `close()`.
   * - `stall`: headers and the first `after` events (JSON: half the body), then silence until the client aborts or `close()`.
   * - `stream_error`: the first `after` events, then the API's error event (streaming requests only).
   */
  fault: 'reset' | 'reset_mid_stream' | 'hang' | 'stall' | 'stream_error'
  reply?: FakeReply
  /** How many SSE events go out before the fault. Default: half of the reply's events, rounded up. */
  after?: number
  /** `stream_error` only: the error's type (default `server_error` for OpenAI, `overloaded_error` for Anthropic). */
  errorType?: string
  message?: string
}

/** The answer is cut by the output-token limit: the tool call's JSON stops halfway, finish reason `length` / `max_tokens`. */
export interface FakeTruncation {
  fault: 'truncated'
  toolCall: FakeToolCall
  text?: string
  usage?: { inputTokens?: number; outputTokens?: number }
}

/** Anything else, verbatim: a status, a body (an object is sent as JSON), headers. */
export interface FakeRawResponse {
  fault: 'http'
  status: number
  body?: unknown
  headers?: Readonly<Record<string, string>>
}

export type FakeFault = FakeHttpFault | FakeStreamFault | FakeTruncation | FakeRawResponse

/** What one request gets. */
export type FakeTurn = FakeReply | FakeFault

/** A script step: a fixed turn, or a function of the request (to assert on it or branch). */
export type FakeStep = FakeTurn | ((request: FakeRequest) => FakeTurn | Promise<FakeTurn>)

/** What became of a request. */
export type FakeOutcome = 'pending' | 'replied' | 'faulted' | 'rejected' | 'client_closed' | 'closed_by_server'

/** One recorded request, as it arrived. */
export interface FakeRequest {
  /** 0-based, in arrival order. */
  readonly index: number
  /** Which API the path belongs to; `undefined` for an unknown path. */
  readonly api: FakeApi | undefined
  readonly method: string
  readonly path: string
  /** Lower-cased names. */
  readonly headers: Readonly<Record<string, string>>
  /** The parsed JSON body (`undefined` when it was not JSON). */
  readonly body: unknown
  readonly stream: boolean
  /** Arrival time on the injected `now()` (the test's manual clock). */
  readonly at: number
  /** Arrival time on the real clock (`Date.now()`). */
  readonly receivedAt: number
  /** The 1-based script step that answered it; `undefined` for a rejected request. */
  readonly turn: number | undefined
  /** Updated as the response goes: `pending` until it ends. */
  readonly outcome: FakeOutcome
  /** `body.model`. */
  readonly model: string | undefined
  /** The system prompt, whichever way the API carries it (`system`/`developer` messages, `instructions`, `system`). */
  readonly system: string | undefined
  /** The names of the tools offered. */
  readonly toolNames: readonly string[]
  /** The tool results sent back in this request, in order. */
  readonly toolResults: ReadonlyArray<{ readonly id: string; readonly content: string }>
}

export interface FakeProviderOptions {
  /** Steps played in order, one per request to a known path. More can be added with `script()`. */
  script?: readonly FakeStep[]
  /** When the script runs out: answer 500 with a message saying so (`'fail'`, the default), or repeat the last step. */
  onEnd?: 'fail' | 'repeat'
  /** The clock arrival times are read from (`FakeRequest.at`). Default `Date.now`. */
  now?: () => number
  /** Bodies larger than this are refused with 413. Default 8 MiB. */
  maxBodyBytes?: number
  /**
   * The APIs it serves; the paths of the others get a 404, as from a server that speaks only these
   * (vLLM, Ollama and most proxies serve Chat Completions and not Responses). Default: all three.
   */
  apis?: readonly FakeApi[]
}

export interface FakeProvider {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string
  /** Pass as `baseURL` to `createOpenAI` (Chat Completions and Responses). */
  readonly openaiBaseURL: string
  /** Pass as `baseURL` to `createAnthropic`. */
  readonly anthropicBaseURL: string
  /** Every request, in arrival order, the rejected ones too. */
  readonly requests: readonly FakeRequest[]
  /** Steps not yet played. */
  readonly remaining: number
  /** Whether the server still accepts connections. */
  readonly listening: boolean
  /** Open sockets (0 after `close()`). */
  readonly openSockets: number
  /** Appends steps to the script. */
  script(...steps: FakeStep[]): void
  /** Resolves with request `index` once it has arrived (rejects if the provider closes first). */
  waitForRequest(index: number): Promise<FakeRequest>
  /** Resolves once no response is in progress (a hung or stalled one counts until the client gives up). */
  whenIdle(): Promise<void>
  /** Destroys every socket and stops listening; resolves when the server is closed. Idempotent. */
  close(): Promise<void>
}
