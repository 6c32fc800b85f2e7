import { type Budget, type Clock, type Logger, type ModelAdapter, type ModelRequest, type ModelResponse, silentLogger } from '@shallot/core'
import { describeModelFailure, modelFailureCode, SETTLED, SignalLink, untilAborted } from '@shallot/core/kit'
import { type AgentEvent, type AgentEventSink, type AgentScopeRunner, noAgentEvents, noScope } from './agent-events.js'
import type { ModelLink } from './model-link.js'

/**
 * What the adapter is handed: the request's fields, and `signal` as an own, enumerable accessor, so an
 * adapter wrapper's `{ ...request, messages }` keeps it. The signal is made only if the adapter reads it.
 */
class AdapterRequest {
  declare readonly messages: ModelRequest['messages']
  declare readonly tools: ModelRequest['tools']
  declare readonly system?: string
  readonly #own: SignalLink

  constructor(request: Omit<ModelRequest, 'signal'>, own: SignalLink) {
    this.messages = request.messages
    this.tools = request.tools
    if (request.system !== undefined) this.system = request.system
    this.#own = own
    Object.defineProperty(this, 'signal', { get: AdapterRequest.#signal, enumerable: true, configurable: true })
  }

  // One getter shared by every request: a getter written per request, in an object literal, made an agent run in the
  // bench (bench/, agent run row) more than twice as slow.
  static readonly #signal = function signal(this: AdapterRequest): AbortSignal {
    return this.#own.signal
  }
}

/**
 * One attempt: the model's answer, or the moment `signal` aborts (the run's cancellation, a layer's
 * deadline) whether or not the adapter listens; a late answer is dropped. The adapter's own signal
 * follows `signal` and aborts once the attempt settles, so a request the adapter left running is
 * cancelled too.
 */
async function once(
  adapter: ModelAdapter,
  request: Omit<ModelRequest, 'signal'>,
  signal: AbortSignal | SignalLink,
): Promise<ModelResponse> {
  const own = new SignalLink(signal)
  try {
    return await untilAborted(adapter.generate(new AdapterRequest(request, own) as unknown as ModelRequest), signal)
  } finally {
    own.abort(SETTLED)
  }
}

export interface ModelCallEnv {
  /** The run's signal. */
  readonly signal: AbortSignal
  readonly clock: Clock
  readonly random: () => number
  readonly budget: Budget
  readonly log: Logger
  readonly emit: AgentEventSink
  readonly within: AgentScopeRunner
  readonly runId: string
  readonly turn: number
}

type ModelCallEvent = Extract<AgentEvent, { type: 'model.call' }>

/** Whether anyone hears of an attempt: a logger, an event listener or its scope. */
export function observed(env: ModelCallEnv): boolean {
  return env.log !== silentLogger || env.emit !== noAgentEvents || env.within !== noScope
}

/** One attempt on one model: which model, which try of the call, and when it started (0 when nobody is told). */
export interface AttemptFacts {
  readonly link: ModelLink
  readonly attempt: number
  readonly started: number
}

/** The line and the `model.call` event of one attempt: answered with `response`, or failed with `failure`. */
export function called(env: ModelCallEnv, facts: AttemptFacts, response: ModelResponse | undefined, failure?: unknown): void {
  const logging = env.log !== silentLogger
  if (!logging && env.emit === noAgentEvents) return
  const { link, attempt } = facts
  const at = env.clock.now()
  const durationMs = at - facts.started
  const usage = response?.usage
  const toolCalls = response?.toolCalls?.length ?? 0
  const provider = providerOf(link)
  if (response !== undefined && logging) {
    env.log.info(
      {
        model: link.name,
        attempt,
        latencyMs: durationMs,
        inputTokens: usage?.inputTokens,
        outputTokens: usage?.outputTokens,
        finishReason: response.finishReason,
        toolCalls,
      },
      'model call',
    )
  }
  const event: { -readonly [K in keyof ModelCallEvent]: ModelCallEvent[K] } = {
    type: 'model.call',
    at,
    runId: env.runId,
    turn: env.turn,
    model: link.name,
    attempt,
    durationMs,
    toolCalls,
  }
  if (provider !== undefined) event.provider = provider
  if (usage !== undefined) event.usage = usage
  if (response?.finishReason !== undefined) event.finishReason = response.finishReason
  if (response === undefined) {
    try {
      event.error = describeModelFailure(failure)
      event.code = modelFailureCode(failure)
    } catch {
      // A throwing getter or a revoked proxy from the adapter: the attempt is still told, in words of our own.
      event.error = 'an error that could not be read'
      event.code = '_OTHER'
    }
  }
  env.emit(event)
}

/**
 * One attempt on `facts.link`, in the listener's scope when there is one: what a model onion's terminal asks.
 * `signal`: the context's, the run's or a link an outer layer (a deadline) set.
 */
export function askOnce(
  env: ModelCallEnv,
  facts: AttemptFacts,
  request: Omit<ModelRequest, 'signal'>,
  signal: AbortSignal | SignalLink,
): Promise<ModelResponse> {
  const { link, attempt, started } = facts
  const ask = () => once(link.adapter, request, signal)
  if (env.within === noScope) return ask()
  const provider = providerOf(link)
  const scope = { type: 'model.call' as const, at: started, runId: env.runId, turn: env.turn, model: link.name, attempt }
  return env.within(provider === undefined ? scope : { ...scope, provider }, ask)
}

/** The provider the adapter names (`openai`, `anthropic`), if it names one. */
export function providerOf(link: ModelLink): string | undefined {
  const provider = (link.adapter as { provider?: unknown }).provider
  return typeof provider === 'string' && provider !== '' ? provider : undefined
}
