import { AIMessage } from '@langchain/core/messages'
import {
  createRun,
  type ModelAdapter,
  type ModelInfo,
  type ModelMiddleware,
  type ModelResponse,
  modelSideOf,
  type RunContext,
} from '@shallot/core'
import type { ModelRequest } from 'langchain'
import { defaultModelMiddleware, type ModelCallHost, timeout } from 'shallot'
import type { z } from 'zod'
import { markErrorResults, speaksAnthropic } from './mark-error-results.js'
import type { shallotMiddlewareOptionsSchema } from './shallot-middleware-options.js'
import { chatModelOfSpare, modelNameOf } from './spare-model.js'

/** The default model stack's first backoff, used only to keep a base under a smaller `modelCall.capMs`. */
const DEFAULT_BASE_MS = 250

/** `modelCall`: the deadline of each attempt, and the retry options of the default model stack, as given. */
export interface ModelCallPolicy {
  /** Deadline of one attempt; the request is aborted when it passes. */
  timeoutMs: number
  /** Attempts per model call, counting the first. */
  maxAttempts?: number | undefined
  /** Full-jitter exponential backoff between attempts: base and cap, in ms. */
  baseMs?: number | undefined
  capMs?: number | undefined
  /** The longest `Retry-After` honoured; a server asking for more is not waited for. */
  maxRetryAfterMs?: number | undefined
}

/**
 * The default model stack, `defaultModelMiddleware()` from `shallot` (a breaker per model, retry, the error
 * classifier, a deadline per attempt), as `createAgent({ modelMiddleware: defaultModelMiddleware() })` lists it,
 * with `modelCall`'s retry fields given to its retry layer and `modelCall.timeoutMs` to its timeout layer.
 */
export function modelCallLayers({ timeoutMs, maxAttempts, baseMs, capMs, maxRetryAfterMs }: ModelCallPolicy): ModelMiddleware[] {
  const retry: Record<string, number> = {}
  if (maxAttempts !== undefined) retry.maxAttempts = maxAttempts
  if (maxRetryAfterMs !== undefined) retry.maxRetryAfterMs = maxRetryAfterMs
  if (capMs !== undefined) retry.capMs = capMs
  // modelCall allows a base above the cap (the cap wins); the retry layer asks base ≤ cap.
  if (baseMs !== undefined || capMs !== undefined) retry.baseMs = Math.min(baseMs ?? DEFAULT_BASE_MS, capMs ?? Number.POSITIVE_INFINITY)
  return defaultModelMiddleware({ retry, timeout: { ms: timeoutMs } })
}

/**
 * The model onion: the layers given, with `modelCall.timeoutMs` as the deadline of each attempt inside them; else
 * the default model stack with `modelCall`'s fields.
 */
export function modelLayersOf(o: z.output<typeof shallotMiddlewareOptionsSchema>): ModelMiddleware[] {
  const given = o.modelMiddleware
  if (given === undefined) return modelCallLayers(o.modelCall)
  const layers = Array.isArray(given)
    ? given.map((entry, i) => modelSideOf(entry, `modelMiddleware[${i}]`))
    : [modelSideOf(given, 'modelMiddleware')]
  return [...layers, timeout({ ms: o.modelCall.timeoutMs }).wrapModelCall]
}

/** Where the agent's own model sits in the onion's context: LangChain asks it through its handler, never through this. */
const AGENT_MODEL: ModelAdapter = {
  generate: () => Promise.reject(new Error("the agent's LangChain model is asked through its handler, not through ctx.model.adapter")),
}

/** The chat model the layers settled on: the agent's own, or a spare of `fallback({ models })`. */
function chatModelOf(asked: ModelInfo, agentModel: unknown): unknown {
  if (asked.adapter === AGENT_MODEL) return agentModel
  const spare = chatModelOfSpare(asked.adapter)
  if (spare !== undefined) return spare
  throw new TypeError(
    `a model layer asked for model "${asked.name}", which is not a LangChain chat model: under LangChain, list spares in fallback({ models }) as spareModel(chatModel)`,
  )
}

const count = (n: unknown) => (typeof n === 'number' && Number.isFinite(n) && n >= 0 ? n : undefined)

/** What the layers that read answers (usage, tracing, context editing) see of the model's message. */
function responseOf(answer: unknown): ModelResponse {
  if (!AIMessage.isInstance(answer)) return { toolCalls: [] }
  const message = answer as AIMessage
  const toolCalls = (message.tool_calls ?? []).map((call) => ({ id: call.id ?? '', name: call.name, args: call.args }))
  // The message's type leaves usage to the provider's structure; the counts are read by their shape.
  const usage = message.usage_metadata as { input_tokens?: unknown; output_tokens?: unknown } | undefined
  const inputTokens = count(usage?.input_tokens)
  const outputTokens = count(usage?.output_tokens)
  return {
    toolCalls,
    ...(message.text === '' ? {} : { text: message.text }),
    usage: { ...(inputTokens === undefined ? {} : { inputTokens }), ...(outputTokens === undefined ? {} : { outputTokens }) },
  }
}

/** What one model call of a thread needs beyond the request: the host, the thread's run, what the model reads of the tools. */
export interface ModelCallEnv {
  readonly host: ModelCallHost
  readonly run: RunContext
  readonly toolText: (tools: ModelRequest['tools']) => ModelRequest['tools']
}

/**
 * One model call of a thread, through the model onion: the request as the model reads it (error results marked
 * `is_error` for Anthropic, the tools' text cleaned and capped), each attempt asked of the model the layers settled
 * on, bound to the attempt's signal (the handler takes none; a model bound to one is how a deadline aborts it).
 */
export function askModel(request: ModelRequest, handler: (request: ModelRequest) => unknown, env: ModelCallEnv): Promise<unknown> {
  const tools = env.toolText(request.tools)
  const parent = request.runtime.signal
  // The call's view of the thread's run: its id and state, the caller's signal, a step budget no model call spends.
  const run = createRun({ id: env.run.id, state: env.run.state, turn: env.run.turn, ...(parent === undefined ? {} : { signal: parent }) })
  return env.host.call({
    model: { name: modelNameOf(request.model), adapter: AGENT_MODEL },
    run,
    ...(parent === undefined ? {} : { signal: parent }),
    ask: async ({ model: asked, signal }) => {
      const model = chatModelOf(asked, request.model) as ModelRequest['model']
      const messages = speaksAnthropic(model) ? markErrorResults(request.messages) : request.messages
      const withConfig = (model as { withConfig?: unknown }).withConfig
      const bound = typeof withConfig === 'function' ? withConfig.call(model, { signal }) : model
      return handler({ ...request, messages, tools, model: bound })
    },
    responseOf,
  })
}
