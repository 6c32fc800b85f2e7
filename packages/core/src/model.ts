import type { ToolCall } from './types.js'

/** One entry of a run's transcript. Plain JSON, so it checkpoints as is. */
export type Message =
  | { readonly role: 'user'; readonly content: string }
  | { readonly role: 'assistant'; readonly content?: string; readonly toolCalls: readonly ToolCall[] }
  | { readonly role: 'tool'; readonly callId: string; readonly name: string; readonly content: string; readonly ok: boolean }

/** A tool as the model sees it in a request. */
export interface ModelTool {
  readonly name: string
  /** The tool's description, with any note a layer attached (e.g. "UNAVAILABLE: circuit open"). */
  readonly description: string
  readonly inputSchema: Record<string, unknown>
  /** The layers' note, when there is one. */
  readonly note?: string
}

export interface ModelRequest {
  readonly messages: readonly Message[]
  readonly tools: readonly ModelTool[]
  readonly signal: AbortSignal
  /** The system prompt (instructions), sent the way the provider carries it. */
  readonly system?: string
}

/** Tokens one model call spent, as the provider reported them; a count it did not report is left out. */
export interface ModelUsage {
  readonly inputTokens?: number
  readonly outputTokens?: number
}

/**
 * Why the model stopped: `stop` (done), `tool_calls`, `length` (cut by the output-token limit: a
 * tool call in that answer is incomplete and must not run), `content_filter`, `error`, `other`.
 */
export type ModelFinishReason = 'stop' | 'tool_calls' | 'length' | 'content_filter' | 'error' | 'other'

export interface ModelResponse {
  readonly text?: string
  /** No tool calls means the model is done and `text` is the run's output. */
  readonly toolCalls?: readonly ToolCall[]
  readonly usage?: ModelUsage
  readonly finishReason?: ModelFinishReason
}

/**
 * The one method shallot needs from a model.
 *
 * @example
 * const model: ModelAdapter = {
 *   async generate({ messages, tools, signal }) {
 *     const reply = await client.chat({ messages: toProvider(messages), tools, signal })
 *     return { text: reply.text, toolCalls: reply.toolCalls }
 *   },
 * }
 */
export interface ModelAdapter {
  /** How reports, events and `createAgent({ prices })` name this model (e.g. `gpt-4o-mini`). Optional. */
  readonly name?: string
  /**
   * Who serves it, as the adapter knows it (an AI SDK model's `provider`: `openai.chat`,
   * `anthropic.messages`); in `model.call` events, and OpenTelemetry's `gen_ai.provider.name`. Optional.
   */
  readonly provider?: string
  generate(request: ModelRequest): Promise<ModelResponse>
}
