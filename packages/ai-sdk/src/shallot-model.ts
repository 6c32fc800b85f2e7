import { type ModelAttempt, type ModelCallHost, modelCallHost } from '@shallot/agent'
import {
  type Clock,
  createRun,
  type LayerEntry,
  type Logger,
  LoopError,
  type ModelAdapter,
  type ModelEvent,
  type ModelInfo,
  type ModelMiddleware,
  type ModelResponse,
  modelSideOf,
  OptionsError,
  parseOptions,
  type RunContext,
} from '@shallot/core'
import { wallNowShape } from '@shallot/core/kit'
import { type LanguageModel, type LanguageModelMiddleware, wrapLanguageModel } from 'ai'
import { defaultModelMiddleware } from 'shallot'
import { z } from 'zod'
import { type ClassifyModelErrorOptions, classifyModelError } from './classify-model-error.js'
import { untilFirstChunk } from './first-chunk.js'
import { languageModelOf } from './language-model-of.js'
import { paramsFor, promptView } from './prompt-view.js'
import type { CallParams, SpecModel } from './sdk-model-types.js'
import { responseOf, usageOf } from './sdk-response.js'

const isObject = (v: unknown): v is object => typeof v === 'object' && v !== null
const isFunction = (v: unknown) => typeof v === 'function'
const custom = <T>(what: string, check: (v: unknown) => boolean) => z.custom<T>(check, { message: `must be ${what}` })
const isModelEntry = (v: unknown) => isFunction(v) || (isObject(v) && isFunction((v as { wrapModelCall?: unknown }).wrapModelCall))
const amount = z.number().nonnegative().finite()

/** Options of {@link shallotModelMiddleware} and {@link shallotModel}. */
export const shallotModelOptionsSchema = z.strictObject({
  /**
   * The model layers every call goes through, outermost first, as `createAgent({ modelMiddleware })` takes them:
   * layers with a model side (`retry()`, `fallback({ models })`) or model middleware functions.
   * Default: `defaultModelMiddleware()` from `shallot` (a breaker per model, retry, the error classifier, a deadline).
   */
  modelMiddleware: custom<LayerEntry<ModelMiddleware> | readonly LayerEntry<ModelMiddleware>[]>(
    'a layer with a model side (e.g. retry()), a model middleware (ctx, next) => Promise<void>, or an array of them',
    (v) => isModelEntry(v) || (Array.isArray(v) && v.every(isModelEntry)),
  ).optional(),
  /** How events, breakers, rate limits and `prices` name the model. Default: its `modelId` (`gpt-4o-mini`). */
  name: z.string().trim().min(1, 'must name the model, e.g. "primary"').max(200).optional(),
  /** Tokens and dollars the run may spend on model calls, counted as `createAgent({ limits })` counts them. */
  limits: z.strictObject({ maxTokens: z.number().int().positive().optional(), maxCostUsd: amount.optional() }).optional(),
  /** What each model costs, by name, in US dollars per million tokens; `limits.maxCostUsd` needs one for every model. */
  prices: z.record(z.string(), z.strictObject({ inputPerMTokUsd: amount, outputPerMTokUsd: amount })).optional(),
  /** The run the calls count into (its id, and the usage `limits` bounds). Default: one run per wrapped model. */
  run: custom<RunContext>('a run from createRun()', (v) => isObject(v) && isObject((v as RunContext).budget)).optional(),
  /** Receives `model.retry`, `model.fallback`, `model.circuit` and the layers' own events. */
  onEvent: custom<(event: ModelEvent) => void>('a function (event) => void', isFunction).optional(),
  clock: custom<Clock>('a Clock { now(), sleep(ms, signal) }', (v) => isObject(v) && isFunction((v as Clock).now)).optional(),
  random: custom<() => number>('a function () => number', isFunction).optional(),
  logger: custom<Logger>('a pino-compatible logger', (v) => isObject(v) && isFunction((v as Logger).child)).optional(),
  /** How failures are classified: the clock of a `Retry-After` date, its clamp, secrets to redact. */
  errors: z
    .strictObject({
      wallNow: wallNowShape.wallNow,
      maxRetryAfterMs: amount.optional(),
      secrets: z.array(z.union([z.string(), z.instanceof(RegExp)])).optional(),
    })
    .optional(),
})

export type ShallotModelOptions = z.input<typeof shallotModelOptionsSchema>
type Parsed = z.output<typeof shallotModelOptionsSchema>

/** Where the wrapped model stands in the layers' context: the SDK asks it, the layers never call this. */
const WRAPPED: ModelAdapter = {
  generate: () => Promise.reject(new Error('a model wrapped by shallotModel() is asked by the AI SDK, not through ctx.model.adapter')),
}

function layersOf(given: Parsed['modelMiddleware']): ModelMiddleware[] {
  if (given === undefined) return defaultModelMiddleware()
  if (!Array.isArray(given)) return [modelSideOf(given, 'modelMiddleware')]
  return given.map((entry, i) => modelSideOf(entry, `modelMiddleware[${i}]`))
}

/** The spare a fallback layer settled on, as a model of the installed specification. */
function spareOf(info: ModelInfo, spares: WeakMap<object, SpecModel>): SpecModel {
  const known = spares.get(info.adapter)
  if (known !== undefined) return known
  const model = languageModelOf(info.adapter)
  if (model === undefined || typeof model === 'string') {
    throw new LoopError('model_failed', `model "${info.name}" cannot be asked under shallotModel(): it is not an AI SDK model object`, {
      details: { model: info.name, fix: "list spares as fallback({ models: [aiSdkModel(anthropic('claude-sonnet-4-5'))] })" },
    })
  }
  // No layers: the SDK's own conversion, so a spare of the previous specification answers in this one.
  const spec = wrapLanguageModel({ model: model as never, middleware: [] }) as unknown as SpecModel
  spares.set(info.adapter, spec)
  return spec
}

/**
 * One attempt on the model the layers settled on, with the request they left. `params` carries the attempt's signal
 * as `abortSignal`, made when the model reads it (a model in the same process that never does costs none).
 */
type Ask<T> = (target: SpecModel, params: CallParams, attempt: ModelAttempt) => PromiseLike<T>

interface Env {
  readonly host: ModelCallHost
  readonly run: RunContext
  readonly infoOf: (model: SpecModel) => ModelInfo
  readonly targetOf: (info: ModelInfo, model: SpecModel) => SpecModel
  readonly classify: (error: unknown) => unknown
}

async function hosted<T>(env: Env, params: CallParams, model: SpecModel, ask: Ask<T>, answerOf?: (answer: T) => ModelResponse): Promise<T> {
  const caller = params.abortSignal
  const view = promptView(params)
  try {
    return await env.host.call({
      model: env.infoOf(model),
      request: view,
      run: env.run,
      signal: caller,
      responseOf: answerOf,
      ask: async (attempt) => {
        const sent = paramsFor(params, view, attempt.request)
        try {
          return await ask(
            env.targetOf(attempt.model, model),
            {
              ...sent,
              get abortSignal() {
                return attempt.signal
              },
            },
            attempt,
          )
        } catch (error) {
          // A deadline or the caller's cancel: the layers read the signal's reason, not the model's echo of it.
          if (attempt.signal.aborted) throw error
          throw env.classify(error)
        }
      },
    })
  } catch (error) {
    // The caller's own cancellation reads as it does without shallot: the signal's reason.
    if (caller?.aborted) throw caller.reason
    throw error
  }
}

/**
 * A language-model middleware for the AI SDK's `wrapLanguageModel` (ai 6 and ai 7) that runs every model call
 * through shallot's model layers: retry with `Retry-After` as a floor, a breaker per model, a deadline per attempt,
 * a fallback chain, a token and cost budget, rate limits, context editing, tracing. Failures leave as shallot's
 * `LoopError` (a provider's `APICallError` is classified first), which the SDK's own `maxRetries` never repeats.
 * A stream is settled at its first chunk: a failure before it is an attempt the layers may repeat, and nothing
 * after it is repeated. Make one per process (its layers keep the breakers); the budget counts per `run`.
 *
 * @example
 * const model = wrapLanguageModel({ model: openai('gpt-4o-mini'), middleware: shallotModelMiddleware() })
 * const { text } = await generateText({ model, prompt: 'Summarise src/main.rs' })
 */
export function shallotModelMiddleware(options?: ShallotModelOptions): LanguageModelMiddleware {
  return middlewareOf(parseOptions('shallotModelMiddleware()', shallotModelOptionsSchema, options ?? {}), 'shallotModelMiddleware()')
}

function middlewareOf(o: Parsed, owner: string): LanguageModelMiddleware {
  const host = modelCallHost({
    modelMiddleware: layersOf(o.modelMiddleware),
    ...(o.clock === undefined ? {} : { clock: o.clock }),
    ...(o.random === undefined ? {} : { random: o.random }),
    ...(o.logger === undefined ? {} : { log: o.logger }),
    ...(o.onEvent === undefined ? {} : { onEvent: o.onEvent }),
    ...(o.limits === undefined ? {} : { limits: o.limits }),
    ...(o.prices === undefined ? {} : { prices: o.prices }),
  })
  const errors = (o.errors ?? {}) as ClassifyModelErrorOptions
  const infos = new WeakMap<object, ModelInfo>()
  const spares = new WeakMap<object, SpecModel>()
  const env: Env = {
    host,
    run: o.run ?? createRun(),
    classify: (error) => classifyModelError(error, errors),
    targetOf: (info, model) => (info.adapter === WRAPPED ? model : spareOf(info, spares)),
    infoOf(model) {
      const known = infos.get(model)
      if (known !== undefined) return known
      const info = modelInfoOf(model, o, owner)
      infos.set(model, info)
      return info
    },
  }
  return {
    specificationVersion: 'v3',
    wrapGenerate: ({ params, model }) => hosted(env, params, model, (target, sent) => target.doGenerate(sent), responseOf),
    wrapStream: ({ params, model }) =>
      hosted(env, params, model, (target, sent, attempt) =>
        untilFirstChunk({
          open: (requestSignal) => target.doStream({ ...sent, abortSignal: requestSignal }),
          attempt: attempt.signal,
          caller: params.abortSignal,
          onFinish: (part) => host.spend(env.run, attempt.model.name, usageOf((part as { usage?: unknown }).usage)),
        }),
      ),
  } as LanguageModelMiddleware
}

/** How the layers name a model; a cost budget needs its price. */
function modelInfoOf(model: SpecModel, o: Parsed, owner: string): ModelInfo {
  const id = (model as { modelId?: unknown }).modelId
  const name = o.name ?? (typeof id === 'string' && id.trim() !== '' ? id : 'model')
  if (o.limits?.maxCostUsd !== undefined && (o.prices === undefined || !Object.hasOwn(o.prices, name))) {
    throw new OptionsError(owner, [
      {
        path: 'prices',
        message: `limits.maxCostUsd needs a price for every model; add prices['${name}'] = { inputPerMTokUsd, outputPerMTokUsd }`,
      },
    ])
  }
  const provider = (model as { provider?: unknown }).provider
  return typeof provider === 'string' && provider !== '' ? { name, provider, adapter: WRAPPED } : { name, adapter: WRAPPED }
}

/**
 * Any AI SDK language model with shallot's model layers in front (see {@link shallotModelMiddleware}), for
 * `generateText`, `streamText` and `ToolLoopAgent` alike.
 *
 * @example
 * const model = shallotModel(openai('gpt-4o-mini'), { limits: { maxTokens: 200_000 } })
 * const { text } = await generateText({ model, tools: shallot.tools, stopWhen: [stepCountIs(10), shallot.stopOnHardError], prompt })
 */
export function shallotModel(model: LanguageModel, options?: ShallotModelOptions): LanguageModel {
  if (!isObject(model) || !isFunction((model as { doGenerate?: unknown }).doGenerate)) {
    throw new OptionsError('shallotModel()', [
      {
        path: 'model',
        message: `expected an AI SDK language model object, e.g. openai('gpt-4o-mini')${typeof model === 'string' ? ' (a gateway id string: pass gateway(id))' : ''}`,
      },
    ])
  }
  const o = parseOptions('shallotModel()', shallotModelOptionsSchema, options ?? {})
  // Checked now, where the model is known, rather than at its first call.
  if (o.limits?.maxCostUsd !== undefined) modelInfoOf(model as SpecModel, o, 'shallotModel()')
  return wrapLanguageModel({ model: model as never, middleware: middlewareOf(o, 'shallotModel()') as never }) as LanguageModel
}
