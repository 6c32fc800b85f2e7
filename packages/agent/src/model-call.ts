import {
  abortReason,
  type Budget,
  type Clock,
  type Logger,
  type ModelAdapter,
  type ModelRequest,
  type ModelResponse,
  silentLogger,
} from '@shallot/core'
import { type AbortSource, describeModelFailure, LinkedSignal, modelFailureCode, neverAborted, onAbort, SETTLED } from '@shallot/core/kit'
import { type AgentEvent, type AgentEventSink, type AgentScopeRunner, noAgentEvents, noScope } from './agent-events.js'
import type { ModelLink } from './model-link.js'

const noop = () => {}

/**
 * What the adapter is handed: the request's fields, and `signal` as an own enumerable accessor, so
 * an adapter wrapper's `{ ...request, messages }` keeps it. The signal is made real only when read.
 * The accessor is one shared function: a getter literal per call would give every request a hidden
 * class of its own, and V8 then keeps each call's objects alive into the old generation.
 */
class AttemptRequest {
  readonly #attempt: { adapterSignal(): AbortSignal }

  declare readonly messages: ModelRequest['messages']
  declare readonly tools: ModelRequest['tools']
  declare readonly system?: string

  constructor(request: Omit<ModelRequest, 'signal'>, attempt: { adapterSignal(): AbortSignal }) {
    this.#attempt = attempt
    // The fields by name, not Object.assign's generic copy: the request is the loop's own object.
    this.messages = request.messages
    this.tools = request.tools
    if (request.system !== undefined)
      this.system = request.system
      // Annex B's __defineGetter__ makes the same own, enumerable, configurable accessor as
      // Object.defineProperty without reading a descriptor object: 30 % less per request here.
    ;(this as unknown as LegacyAccessors).__defineGetter__('signal', signalGetter)
  }

  static signalOf(request: AttemptRequest): AbortSignal {
    return request.#attempt.adapterSignal()
  }
}

interface LegacyAccessors {
  __defineGetter__(key: string, getter: () => unknown): void
}

function signalGetter(this: AttemptRequest): AbortSignal {
  return AttemptRequest.signalOf(this)
}

/**
 * One attempt: settles with the model's answer, or the moment its signal aborts (the run's
 * cancellation, a layer's deadline), whether or not the adapter listens to its signal; a late answer
 * is dropped. The adapter's signal exists only if it reads `request.signal`, and is aborted once the
 * attempt settles, so a request the adapter left running is cancelled too. The deadline is the
 * timeout layer's (`timeout()` in `modelMiddleware`), which aborts the signal with its error.
 */
class ModelAttempt {
  readonly promise: Promise<ModelResponse>
  readonly #resolve: (value: ModelResponse) => void
  readonly #reject: (err: unknown) => void
  #waiting = true
  #own: LinkedSignal | undefined = undefined
  /** Why the adapter's signal aborts once the attempt settled: the signal's reason, or "settled". */
  #closedWith: unknown = undefined
  #offAbort: () => void = noop

  constructor(readonly signal: AbortSource) {
    this.promise = new Promise<ModelResponse>(capture)
    this.#resolve = capturedResolve as (value: ModelResponse) => void
    this.#reject = capturedReject
  }

  start(model: ModelAdapter, request: Omit<ModelRequest, 'signal'>): Promise<ModelResponse> {
    if (this.signal !== neverAborted) this.#offAbort = onAbort(this.signal, () => this.#settle(false, abortReason(this.signal)))
    if (this.#waiting) this.#ask(model, new AttemptRequest(request, this))
    return this.promise
  }

  adapterSignal(): AbortSignal {
    let own = this.#own
    if (own === undefined) {
      // Read after the attempt settled: already aborted, with the reason it settled with.
      own = new LinkedSignal(this.#waiting ? this.signal : neverAborted)
      if (!this.#waiting) own.close(this.#closedWith)
      this.#own = own
    }
    return own.signal
  }

  /** Calls the adapter and reacts to its answer: a throw inside `generate` is a failure like a rejection. */
  #ask(model: ModelAdapter, request: AttemptRequest): void {
    let answer: unknown
    try {
      answer = model.generate(request as unknown as ModelRequest)
    } catch (err) {
      this.#settle(false, err)
      return
    }
    // Reactions, not an awaiting function: the smaller of the two while the model thinks.
    Promise.resolve(answer as ModelResponse | PromiseLike<ModelResponse>).then(
      (response) => this.#settle(true, response),
      (err: unknown) => this.#settle(false, err),
    )
  }

  #settle(ok: boolean, value: unknown): void {
    if (!this.#waiting) return
    this.#waiting = false
    this.#offAbort()
    // Closes the adapter's signal once: with the run's reason if it aborted first, as LinkedSignal does.
    this.#closedWith = this.signal.aborted ? this.signal.reason : SETTLED
    this.#own?.close(SETTLED)
    if (ok) this.#resolve(value as ModelResponse)
    else this.#reject(value)
  }
}

let capturedResolve: (response: never) => void = noop
let capturedReject: (err: unknown) => void = noop
function capture(resolve: (response: never) => void, reject: (err: unknown) => void): void {
  capturedResolve = resolve
  capturedReject = reject
}

function once(link: ModelLink, request: Omit<ModelRequest, 'signal'>, signal: AbortSource): Promise<ModelResponse> {
  return new ModelAttempt(signal).start(link.adapter, request)
}

export interface ModelCallEnv {
  /** The run's signal, or its stop (never made real here unless a backoff must wait on it). */
  readonly signal: AbortSource
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

/** The line and the `model.call` event of one attempt, answered or failed. */
export function called(
  link: ModelLink,
  attempt: number,
  started: number,
  env: ModelCallEnv,
  response: ModelResponse | undefined,
  failure: unknown,
): void {
  const logging = env.log !== silentLogger
  if (!logging && env.emit === noAgentEvents) return
  const at = env.clock.now()
  const durationMs = at - started
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

/** One attempt inside the listener's `within`, with the scope it is told about. */
function attemptWithin(
  link: ModelLink,
  attempt: number,
  started: number,
  request: Omit<ModelRequest, 'signal'>,
  env: ModelCallEnv,
  signal: AbortSource = env.signal,
): Promise<ModelResponse> {
  const provider = providerOf(link)
  const scope = { type: 'model.call' as const, at: started, runId: env.runId, turn: env.turn, model: link.name, attempt }
  return env.within(provider === undefined ? scope : { ...scope, provider }, () => once(link, request, signal))
}

/** One attempt on `link`, with the deadline and in the listener's scope: what a model onion's terminal asks. `signal`: the context's, if a layer set one. */
export function askOnce(
  link: ModelLink,
  attempt: number,
  started: number,
  request: Omit<ModelRequest, 'signal'>,
  env: ModelCallEnv,
  signal: AbortSource = env.signal,
): Promise<ModelResponse> {
  return env.within === noScope ? once(link, request, signal) : attemptWithin(link, attempt, started, request, env, signal)
}

function providerOf(link: ModelLink): string | undefined {
  const provider = (link.adapter as { provider?: unknown }).provider
  return typeof provider === 'string' && provider !== '' ? provider : undefined
}
