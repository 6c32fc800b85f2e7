import { context, SpanKind, SpanStatusCode, type Tracer, trace } from '@opentelemetry/api'
import type { Agent, RunOutcome } from '@shallot/agent'
import { parseOptions } from '@shallot/core'
import { z } from 'zod'
import { ClockTime, MAX_ATTRIBUTE_CHARS, sanitizerOf } from './attributes.js'
import { errorTypeOf } from './error-type.js'
import { SCOPE } from './scope.js'
import { RunTally, tallyScope } from './usage.js'

/** The tally of the run in flight, read by {@link instrumentModel}. */
export const agentTally = tallyScope()

export interface InstrumentAgentOptions {
  /** `gen_ai.agent.name`, and the span name `invoke_agent {name}`. */
  name?: string
  tracer?: Tracer
  secrets?: readonly (string | RegExp)[]
}

const optionsSchema = z
  .object({
    name: z.string().min(1).optional(),
    tracer: z
      .custom<Tracer>((v) => typeof (v as Tracer | undefined)?.startSpan === 'function', 'must be an OpenTelemetry Tracer')
      .optional(),
    secrets: z.array(z.union([z.string(), z.instanceof(RegExp)])).optional(),
  })
  .strict()

/**
 * Wraps an agent so each run (and each resume) is an `invoke_agent` span, active while the run goes
 * on: its `chat` and `execute_tool` spans are children. A stopped run ends the span with status
 * ERROR and `error.type` set to the LoopError's kind; token totals come from {@link instrumentModel}.
 *
 * @deprecated Pass `otel().onAgentEvent` as the agent's `onEvent` (and `attach` the stack): the run span and its
 * token totals come from core's `run.started` / `run.finished` events. Kept working for existing setups.
 * @example
 * const agent = instrumentAgent(createAgent({ model, tools, middleware: [otel(), ...defaultMiddleware()] }), { name: 'billing' })
 */
export function instrumentAgent(agent: Agent, options: InstrumentAgentOptions = {}): Agent {
  if (typeof agent?.run !== 'function' || typeof agent.stack?.dispatch !== 'function')
    throw new TypeError('instrumentAgent(): agent must be what createAgent() returns')
  const parsed = parseOptions('instrumentAgent()', optionsSchema, options)
  const tracer = parsed.tracer ?? trace.getTracer(SCOPE.name, SCOPE.version)
  const text = sanitizerOf(parsed.secrets)
  const name = parsed.name === undefined ? undefined : text.text(parsed.name, MAX_ATTRIBUTE_CHARS)
  const clock = agent.stack.clock
  const time = new ClockTime()

  async function traced(runId: string | undefined, resumed: boolean, go: () => Promise<RunOutcome>): Promise<RunOutcome> {
    const span = tracer.startSpan(name === undefined ? 'invoke_agent' : `invoke_agent ${name}`, {
      kind: SpanKind.INTERNAL,
      startTime: time.at(clock),
      attributes: {
        'gen_ai.operation.name': 'invoke_agent',
        ...(name === undefined ? {} : { 'gen_ai.agent.name': name }),
        ...(runId === undefined ? {} : { 'shallot.run.id': text.text(runId, MAX_ATTRIBUTE_CHARS) }),
        'shallot.run.resumed': resumed,
      },
    })
    const tally = new RunTally()
    try {
      const outcome = await agentTally.run(tally, () => context.with(trace.setSpan(context.active(), span), go))
      span.setAttributes({
        'shallot.run.id': text.text(outcome.runId, MAX_ATTRIBUTE_CHARS),
        'shallot.run.status': outcome.status,
        'shallot.run.turns': outcome.turns,
        'shallot.run.steps': outcome.steps,
        'gen_ai.usage.input_tokens': tally.inputTokens,
        'gen_ai.usage.output_tokens': tally.outputTokens,
      })
      if (outcome.status === 'stopped') {
        span.setAttribute('error.type', outcome.error.kind)
        span.setStatus({ code: SpanStatusCode.ERROR, message: text.text(outcome.error.message, MAX_ATTRIBUTE_CHARS) })
      }
      return outcome
    } catch (err) {
      span.setAttribute('error.type', errorTypeOf(err))
      span.setStatus({
        code: SpanStatusCode.ERROR,
        message: text.text(err instanceof Error ? err.message : String(err), MAX_ATTRIBUTE_CHARS),
      })
      throw err
    } finally {
      span.end(time.at(clock))
    }
  }

  return {
    stack: agent.stack,
    run: (runOptions) => traced(runOptions?.runId, false, () => agent.run(runOptions)),
    resume: (runId, resumeOptions) => traced(runId, true, () => agent.resume(runId, resumeOptions)),
  }
}
