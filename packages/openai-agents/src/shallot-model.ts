import type { ModelResponse as AgentsModelResponse, Model, ModelRequest, StreamEvent } from '@openai/agents'
import { LoopError, type ModelAdapter, type ModelInfo, parseOptions, type RunContext } from '@shallot/core'
import { type ModelCallHost, modelCallHost } from 'shallot'
import { z } from 'zod'
import { modelResponseOf } from './model-response-of.js'
import { hostOptionsOf, modelHostShape } from './shallot-model-options.js'
import { startStream } from './streamed-attempt.js'

/** The Agents SDK model behind each adapter `spareModel` made (and behind each wrapped model's own). */
const sdkModels = new WeakMap<ModelAdapter, Model>()

const isModel = (v: unknown): v is Model =>
  typeof v === 'object' &&
  v !== null &&
  typeof (v as Model).getResponse === 'function' &&
  typeof (v as Model).getStreamedResponse === 'function'

export function checkModel(model: unknown, where: string): asserts model is Model {
  if (isModel(model)) return
  const fix =
    typeof model === 'string'
      ? `got the name '${model}': pass a Model (new OpenAIChatCompletionsModel(client, '${model}')), or use shallotModelProvider() for model names`
      : 'pass an Agents SDK Model (an object with getResponse() and getStreamedResponse()), e.g. new OpenAIResponsesModel(client, name)'
  throw new TypeError(`${where}: ${fix}`)
}

/**
 * An Agents SDK model as a spare of `fallback({ models })` in a {@link shallotModel}'s `modelMiddleware`: when the
 * agent's model is down, the layers ask this one. `name` names it in events, reports and its own circuit breaker.
 *
 * @example
 * const model = shallotModel(primary, { modelMiddleware: [fallback({ models: [spareModel(backup, 'gpt-4o-mini')] }), ...defaultModelMiddleware()] })
 */
export function spareModel(model: Model, name: string): ModelAdapter {
  checkModel(model, 'spareModel()')
  if (typeof name !== 'string' || name.trim() === '')
    throw new TypeError("spareModel(): name must be a non-empty string, e.g. 'gpt-4o-mini'")
  const adapter: ModelAdapter = {
    name,
    generate: () =>
      Promise.reject(
        new TypeError(`spareModel('${name}') is asked through the OpenAI Agents SDK: list it in a shallotModel's modelMiddleware`),
      ),
  }
  sdkModels.set(adapter, model)
  return adapter
}

function sdkModelOf(model: ModelInfo): Model {
  const found = sdkModels.get(model.adapter)
  if (found !== undefined) return found
  throw new TypeError(
    `a model layer asked for model '${model.name}', which is not an Agents SDK model: give fallback({ models }) spares made with spareModel(model, name)`,
  )
}

/**
 * The request as shallot forwards it: with the attempt's signal, and marked as retried by its caller, which is how
 * the SDK's OpenAI models are told to send it with the `openai` client's own retries off (`maxRetries: 0`): the
 * layers' retry is the only one, whatever the client was built with.
 */
function forwarded(request: ModelRequest, signal: AbortSignal): ModelRequest {
  const internal = (request as { _internal?: Record<string, unknown> })._internal
  return { ...request, signal, _internal: { ...internal, runnerManagedRetry: true } } as ModelRequest
}

/** The runner's own model retries (`modelSettings.retry`) would repeat every call the layers already repeated. */
function refuseRunnerRetries(request: ModelRequest, name: string): void {
  const retry = request.modelSettings?.retry
  if (retry === undefined || (retry.maxRetries ?? 0) === 0 || retry.policy === undefined) return
  throw new TypeError(
    `shallotModel('${name}'): modelSettings.retry would repeat each call shallot's model layers already retried; leave it out and give retry() in modelMiddleware`,
  )
}

/** The failure of a stream after its first event reached the caller: not retried, ended as the run's model failure. */
function streamFailure(error: unknown, name: string): unknown {
  if (LoopError.is(error)) return error
  const message = error instanceof Error ? error.message : String(error)
  return new LoopError('model_failed', `the model's stream failed after its first event reached the caller (not retried): ${message}`, {
    cause: error,
    details: { model: name, streamed: true },
  })
}

/** `model` as an Agents SDK `Model` whose every call runs through `host` (the provider's, or a model's own). */
export function hostedModel(model: Model, name: string, host: ModelCallHost, run: RunContext | undefined): Model {
  const info: ModelInfo = { name, adapter: spareModel(model, name) }
  const common = (request: ModelRequest) => ({
    model: info,
    ...(run === undefined ? {} : { run }),
    ...(request.signal === undefined ? {} : { signal: request.signal }),
  })
  return {
    ...(model.supportsPromptModelSelection === true ? { supportsPromptModelSelection: true } : {}),
    async getResponse(request) {
      refuseRunnerRetries(request, name)
      return host.call<AgentsModelResponse>({
        ...common(request),
        ask: ({ model: asked, signal }) => sdkModelOf(asked).getResponse(forwarded(request, signal)),
        responseOf: modelResponseOf,
      })
    },
    async *getStreamedResponse(request): AsyncIterable<StreamEvent> {
      refuseRunnerRetries(request, name)
      const started = await host.call({
        ...common(request),
        ask: ({ model: asked, signal }) => startStream(sdkModelOf(asked), forwarded(request, signal), signal, request.signal),
      })
      try {
        for (let next = started.first; next.done !== true; next = await started.rest.next()) yield next.value
      } catch (error) {
        throw request.signal?.aborted ? error : streamFailure(error, name)
      } finally {
        started.done()
        await Promise.resolve(started.rest.return?.()).catch(() => {})
      }
    },
  }
}

/** Options of {@link shallotModel}. */
export const shallotModelOptionsSchema = z.strictObject({
  ...modelHostShape,
  /** How events, reports and the circuit breaker name the model. Default `'model'`. */
  name: z.string().trim().min(1).max(256).optional(),
})

export type ShallotModelOptions = z.input<typeof shallotModelOptionsSchema>

/**
 * Puts shallot's model layers in front of an OpenAI Agents SDK model: each `getResponse` and streamed call goes
 * through them (by default `defaultModelMiddleware()`: a breaker, retry with the server's Retry-After as a floor, the
 * provider's failure classified once, a deadline per attempt). A stream is retried only until its first event
 * reached the caller. The `openai` client's own retries are turned off for each request, so the layers' retry is
 * the only one. A failure the layers give up on rejects `run()` with a `LoopError` (`model_failed`,
 * `user_input_required` for a refused key, `fallback_exhausted`, …).
 *
 * @example
 * const model = shallotModel(new OpenAIChatCompletionsModel(new OpenAI(), 'gpt-4o'), { name: 'gpt-4o' })
 * const agent = new Agent({ name: 'coder', instructions, model, tools })
 */
export function shallotModel(model: Model, options?: ShallotModelOptions): Model {
  checkModel(model, 'shallotModel()')
  const o = parseOptions('shallotModel()', shallotModelOptionsSchema, options)
  return hostedModel(model, o.name ?? 'model', modelCallHost(hostOptionsOf(o)), o.run)
}
