import { type Attributes, context, type Meter, metrics, SpanKind, SpanStatusCode, type Tracer, trace } from '@opentelemetry/api'
import { type Clock, type ModelAdapter, parseOptions, systemClock } from '@shallot/core'
import { z } from 'zod'
import { ClockTime, MAX_ATTRIBUTE_CHARS, sanitizerOf } from './attributes.js'
import { errorTypeOf } from './error-type.js'
import { agentTally } from './instrument-agent.js'
import { instrumentsOf } from './instruments.js'
import { providerName } from './provider-name.js'
import { SCOPE } from './scope.js'
import { factsOf, type RunTally } from './usage.js'

export interface InstrumentModelOptions {
  /** The model asked for, e.g. `gpt-4.1-mini`: `gen_ai.request.model` and the span name `chat {model}`. */
  model: string
  /**
   * `gen_ai.provider.name`: a well-known value (`openai`, `anthropic`, `aws.bedrock`) or a provider id
   * mapped to one (`openai.chat` → `openai`). Default: left out.
   */
  provider?: string
  tracer?: Tracer
  meter?: Meter
  /** The agent's clock, so span times and durations follow it. Default: the system clock. */
  clock?: Clock
  secrets?: readonly (string | RegExp)[]
}

const optionsSchema = z
  .object({
    model: z.string().min(1, 'must name the model, e.g. "gpt-4.1-mini"'),
    provider: z.string().min(1).optional(),
    tracer: z
      .custom<Tracer>((v) => typeof (v as Tracer | undefined)?.startSpan === 'function', 'must be an OpenTelemetry Tracer')
      .optional(),
    meter: z
      .custom<Meter>((v) => typeof (v as Meter | undefined)?.createHistogram === 'function', 'must be an OpenTelemetry Meter')
      .optional(),
    clock: z.custom<Clock>((v) => typeof (v as Clock | undefined)?.now === 'function', 'must be a Clock with now()').optional(),
    secrets: z.array(z.union([z.string(), z.instanceof(RegExp)])).optional(),
  })
  .strict()

/**
 * Wraps a model so each call (each attempt core makes) is a `chat {model}` client span with
 * `gen_ai.usage.input_tokens` / `output_tokens` and finish reason when the response carries them,
 * and records `gen_ai.client.operation.duration` and `gen_ai.client.token.usage`. The model's own
 * spans (its HTTP client's) become children of the chat span.
 *
 * @deprecated Pass `otel().onAgentEvent` as the agent's `onEvent`: core's `model.call` event carries each
 * attempt's latency, tokens and finish reason. Still the way to trace a model used outside shallot's agent.
 * @example
 * const agent = createAgent({ model: instrumentModel(model, { model: 'gpt-4.1-mini', provider: 'openai' }), tools })
 */
export function instrumentModel(model: ModelAdapter, options: InstrumentModelOptions): ModelAdapter {
  if (typeof model?.generate !== 'function')
    throw new TypeError('instrumentModel(): model must be an object with generate({ messages, tools, signal })')
  const parsed = parseOptions('instrumentModel()', optionsSchema, options)
  const tracer = parsed.tracer ?? trace.getTracer(SCOPE.name, SCOPE.version)
  const instruments = instrumentsOf(parsed.meter ?? metrics.getMeter(SCOPE.name, SCOPE.version))
  const clock = parsed.clock ?? systemClock
  const text = sanitizerOf(parsed.secrets)
  const time = new ClockTime()
  const base: Attributes = {
    'gen_ai.operation.name': 'chat',
    'gen_ai.request.model': text.text(parsed.model, MAX_ATTRIBUTE_CHARS),
  }
  const provider = providerName(parsed.provider, (s) => text.text(s, MAX_ATTRIBUTE_CHARS))
  if (provider !== undefined) base['gen_ai.provider.name'] = provider
  return {
    async generate(request) {
      const started = clock.now()
      const span = tracer.startSpan(`chat ${base['gen_ai.request.model']}`, {
        kind: SpanKind.CLIENT,
        attributes: base,
        startTime: time.at(clock, started),
      })
      const tally: RunTally | undefined = agentTally.getStore()
      const metric: Attributes = { ...base }
      try {
        const response = await context.with(trace.setSpan(context.active(), span), () => model.generate(request))
        const facts = factsOf(response)
        if (facts.inputTokens !== undefined) {
          span.setAttribute('gen_ai.usage.input_tokens', facts.inputTokens)
          instruments.tokens.record(facts.inputTokens, { ...base, 'gen_ai.token.type': 'input' })
          if (tally !== undefined) tally.inputTokens += facts.inputTokens
        }
        if (facts.outputTokens !== undefined) {
          span.setAttribute('gen_ai.usage.output_tokens', facts.outputTokens)
          instruments.tokens.record(facts.outputTokens, { ...base, 'gen_ai.token.type': 'output' })
          if (tally !== undefined) tally.outputTokens += facts.outputTokens
        }
        if (facts.finishReason !== undefined) span.setAttribute('gen_ai.response.finish_reasons', [text.text(facts.finishReason, 64)])
        span.setAttribute('shallot.model.tool_calls', facts.toolCalls)
        return response
      } catch (err) {
        const type = errorTypeOf(err)
        metric['error.type'] = type
        span.setAttribute('error.type', type)
        span.setStatus({
          code: SpanStatusCode.ERROR,
          message: text.text(err instanceof Error ? err.message : String(err), MAX_ATTRIBUTE_CHARS),
        })
        throw err
      } finally {
        const ended = clock.now()
        span.end(time.at(clock, ended))
        instruments.duration.record(Math.max(0, ended - started) / 1000, metric)
      }
    },
  }
}
