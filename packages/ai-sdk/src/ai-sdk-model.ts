import {
  type ModelAdapter,
  type ModelFinishReason,
  type ModelRequest,
  type ModelResponse,
  type ModelUsage,
  OptionsError,
  parseOptions,
  type ToolCall,
} from '@shallot/core'
import { wallNowShape } from '@shallot/core/kit'
import { generateText, type LanguageModel, streamText } from 'ai'
import { z } from 'zod'
import { type ClassifyModelErrorOptions, classifyModelError } from './classify-model-error.js'
import { rememberLanguageModel } from './language-model-of.js'
import { flagsToolErrors } from './soft-error-output.js'
import { toModelMessages, toToolSet } from './to-model-messages.js'

/** The SDK's `providerOptions` type of the installed major. */
type ProviderOptions = NonNullable<Parameters<typeof generateText>[0]['providerOptions']>

export interface AiSdkModelOptions {
  /** How reports, events and `createAgent({ prices })` name this model. Default: the model's id (`gpt-4o-mini`). */
  name?: string
  /** Use `streamText` instead of `generateText`. An error event inside the stream fails the call. Default false. */
  stream?: boolean
  /** The provider SDK's own retries. Default 0: the agent's model-call policy is the only one. */
  maxRetries?: number
  /** The system prompt used when the request carries none. */
  system?: string
  maxOutputTokens?: number
  temperature?: number
  /** Extra HTTP headers of every call. */
  headers?: Record<string, string>
  /** Passed through to the provider (`{ openai: { … } }`, `{ anthropic: { … } }`). */
  providerOptions?: ProviderOptions
  /** How failures are classified: the clock of a `Retry-After` date, its clamp, secrets to redact. */
  errors?: ClassifyModelErrorOptions
}

const optionsSchema = z
  .object({
    stream: z.boolean().default(false),
    maxRetries: z.number().int().min(0).max(10).default(0),
    /** How reports, events and `createAgent({ prices })` name this model. Default: the model's id (`gpt-4o-mini`). */
    name: z.string().trim().min(1, 'must name the model, e.g. "primary"').max(200).optional(),
    system: z.string().optional(),
    maxOutputTokens: z.number().int().positive().optional(),
    temperature: z.number().min(0).max(2).optional(),
    headers: z.record(z.string(), z.string()).optional(),
    providerOptions: z.record(z.string(), z.record(z.string(), z.unknown())).optional(),
    errors: z
      .object({
        wallNow: wallNowShape.wallNow,
        maxRetryAfterMs: z.number().nonnegative().finite().optional(),
        secrets: z.array(z.union([z.string(), z.instanceof(RegExp)])).optional(),
      })
      .strict()
      .optional(),
  })
  .strict()

const FINISH: Record<string, ModelFinishReason> = {
  stop: 'stop',
  'tool-calls': 'tool_calls',
  length: 'length',
  'content-filter': 'content_filter',
  error: 'error',
}

const count = (value: unknown): number | undefined =>
  typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.round(value) : undefined

function usageOf(usage: unknown): ModelUsage | undefined {
  if (typeof usage !== 'object' || usage === null) return undefined
  const { inputTokens, outputTokens } = usage as { inputTokens?: unknown; outputTokens?: unknown }
  const input = count(inputTokens)
  const output = count(outputTokens)
  if (input === undefined && output === undefined) return undefined
  return { ...(input === undefined ? {} : { inputTokens: input }), ...(output === undefined ? {} : { outputTokens: output }) }
}

interface SdkToolCall {
  readonly toolCallId: string
  readonly toolName: string
  readonly input: unknown
}

/** The SDK's answer as shallot's: a tool call that did not parse keeps its raw text, and the stack answers it. */
function response(text: string, calls: readonly SdkToolCall[], finishReason: string, usage: unknown): ModelResponse {
  const toolCalls: ToolCall[] = calls.map((c) => ({ id: c.toolCallId, name: c.toolName, args: c.input }))
  const mapped = usageOf(usage)
  return {
    ...(text === '' ? {} : { text }),
    toolCalls,
    finishReason: FINISH[finishReason] ?? 'other',
    ...(mapped === undefined ? {} : { usage: mapped }),
  }
}

function isLanguageModel(model: unknown): model is LanguageModel {
  if (typeof model === 'string') return model.length > 0
  return typeof model === 'object' && model !== null && typeof (model as { doGenerate?: unknown }).doGenerate === 'function'
}

/**
 * A shallot `ModelAdapter` over any AI SDK language model (OpenAI, Anthropic, Google, an
 * OpenAI-compatible server such as Ollama or vLLM), so every provider drives `createAgent`. The
 * SDK never executes a tool: the calls come back to the agent, which runs them through its stack.
 * Failures are thrown in shallot's vocabulary by {@link classifyModelError}; the provider's own
 * retries are off unless `maxRetries` says otherwise, so the agent's policy is the only one.
 *
 * @example
 * import { createOpenAI } from '@ai-sdk/openai'
 * const openai = createOpenAI({ apiKey: process.env.OPENAI_API_KEY })
 * const agent = createAgent({ model: aiSdkModel(openai('gpt-4o-mini'), { system: 'You are terse.' }), tools: [readFile] })
 * const outcome = await agent.run({ input: 'Summarise src/main.rs' })
 */
export function aiSdkModel(model: LanguageModel, options?: AiSdkModelOptions): ModelAdapter {
  if (!isLanguageModel(model)) {
    throw new OptionsError('aiSdkModel()', [
      { path: 'model', message: 'expected an AI SDK language model (e.g. openai("gpt-4o-mini")) or a gateway model id string' },
    ])
  }
  const { name, stream, maxRetries, system, errors, ...settings } = parseOptions('aiSdkModel()', optionsSchema, options ?? {})
  const modelName = name ?? modelIdOf(model)
  const classify = (err: unknown) => classifyModelError(err, (errors ?? {}) as ClassifyModelErrorOptions)
  const flagErrors = flagsToolErrors(model)

  async function generate(request: ModelRequest): Promise<ModelResponse> {
    const signal = request.signal
    const prompt = request.system ?? system
    const call = {
      model,
      messages: toModelMessages(request.messages, flagErrors),
      ...(request.tools.length === 0 ? {} : { tools: toToolSet(request.tools) }),
      ...(prompt === undefined ? {} : { system: prompt }),
      maxRetries,
      abortSignal: signal,
      ...(settings as Pick<AiSdkModelOptions, 'maxOutputTokens' | 'temperature' | 'headers' | 'providerOptions'>),
    }
    try {
      if (!stream) {
        const result = await generateText(call)
        return response(result.text, result.toolCalls, result.finishReason, result.usage)
      }
      // Errors are read from the stream's parts; the callback only keeps the SDK from logging them.
      const result = streamText({ ...call, onError: () => {} })
      let failure: { error: unknown } | undefined
      let aborted = false
      for await (const part of result.fullStream) {
        if (part.type === 'error') failure ??= { error: part.error }
        else if (part.type === 'abort') aborted = true
      }
      if (failure !== undefined) throw failure.error
      if (aborted) throw Object.assign(new Error('the model stream was aborted'), { name: 'AbortError' })
      const [text, toolCalls, finishReason, usage] = await Promise.all([result.text, result.toolCalls, result.finishReason, result.usage])
      return response(text, toolCalls, finishReason, usage)
    } catch (err) {
      // Cancellation and the agent's own deadline are the agent's to report, with their own reason.
      if (signal.aborted) throw signal.reason ?? err
      throw classify(err)
    }
  }

  const provider = typeof model === 'string' ? undefined : (model as { provider?: unknown }).provider
  const adapter: ModelAdapter = {
    ...(modelName === undefined ? {} : { name: modelName }),
    ...(typeof provider === 'string' && provider !== '' ? { provider } : {}),
    generate,
  }
  // A spare of fallback({ models }) under shallotModel() is asked through its own language model.
  rememberLanguageModel(adapter, model)
  return adapter
}

function modelIdOf(model: LanguageModel): string | undefined {
  const id = typeof model === 'string' ? model : (model as { modelId?: unknown }).modelId
  return typeof id === 'string' && id.trim() !== '' ? id : undefined
}
