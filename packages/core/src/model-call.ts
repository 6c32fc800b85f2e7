import { type AgentEvent, type AgentEventSink, type AgentScopeRunner, noAgentEvents, noScope } from './agent-events.js'
import { type AbortSource, abortReason, neverAborted, onAbort } from './channel.js'
import { systemClock } from './clock.js'
import { type DeadlineQueue, deadlineQueue, type Expiring, startTimer } from './deadlines.js'
import { LoopError, ToolError } from './errors.js'
import { LinkedSignal, SETTLED } from './linked-signal.js'
import { silentLogger } from './logger.js'
import type { ModelAdapter, ModelRequest, ModelResponse } from './model.js'
import { admitModel, type ModelBreakerOptions, type ModelVerdict, settleModel } from './model-breaker.js'
import type { ModelLink } from './model-chain.js'
import { createSanitizer } from './text/sanitize.js'
import type { Budget, Clock, Logger } from './types.js'

export interface ModelRetry {
  /** Attempts per model call, counting the first. */
  maxAttempts: number
  /** Full-jitter backoff: a random wait up to `baseMs * 2^(attempt-1)`, at most `capMs`. */
  baseMs: number
  capMs: number
  /**
   * Longest provider pushback (`Retry-After`) waited for. A longer one is never cut short: the model
   * is given up for this call instead (the next of the chain, or the end of the run). Default 60 s.
   */
  maxRetryAfterMs: number
}

const TRANSIENT_CODES = new Set(['ECONNRESET', 'ECONNREFUSED', 'ETIMEDOUT', 'EPIPE', 'EAI_AGAIN', 'ENOTFOUND', 'UND_ERR_SOCKET'])

/** Whether a model failure is worth another try: timeouts, 408/429/5xx, dropped connections. */
export function isTransientModelError(err: unknown): boolean {
  if (ToolError.is(err)) return err.retryable
  if (typeof err !== 'object' || err === null) return false
  const e = err as { status?: unknown; statusCode?: unknown; code?: unknown; name?: unknown; cause?: unknown }
  const status = typeof e.status === 'number' ? e.status : typeof e.statusCode === 'number' ? e.statusCode : undefined
  if (status !== undefined) return status === 408 || status === 429 || status >= 500
  if (typeof e.code === 'string' && TRANSIENT_CODES.has(e.code)) return true
  if (e.name === 'TimeoutError') return true
  return e.cause !== undefined && e.cause !== err && isTransientModelError(e.cause)
}

const noop = () => {}
// A provider's message can quote a key or an address back: the log line gets it without them, cut at 500.
const lineText = createSanitizer()

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
 * One attempt: settles with the model's answer, at the deadline, or the moment the run is
 * cancelled, whether or not the adapter listens to its signal; a late answer is dropped. The
 * adapter's signal exists only if it reads `request.signal`, and is aborted once the attempt
 * settles, so a request the adapter left running is cancelled too. On the real clock the deadline
 * is an entry in the process's queue for its duration, not a timer of its own.
 */
class ModelAttempt<T = ModelResponse> implements Expiring {
  deadline = 0
  prevDue: Expiring | undefined = undefined
  nextDue: Expiring | undefined = undefined
  queue: DeadlineQueue | undefined = undefined
  readonly promise: Promise<T>
  protected readonly resolve: (value: T | PromiseLike<T>) => void
  protected readonly reject: (err: unknown) => void
  #waiting = true
  #own: LinkedSignal | undefined = undefined
  /** Why the adapter's signal aborts once the attempt settled: the deadline's error, or "settled". */
  #closedWith: unknown = undefined
  #offAbort: () => void = noop
  #cancelTimer: () => void = noop

  constructor(
    readonly signal: AbortSource,
    readonly timeoutMs: number,
  ) {
    this.promise = new Promise<T>(capture)
    this.resolve = capturedResolve as (value: T | PromiseLike<T>) => void
    this.reject = capturedReject
  }

  /** `now` is when the attempt started on `clock`, the deadline's base. */
  start(model: ModelAdapter, request: Omit<ModelRequest, 'signal'>, clock: Clock, now: number): Promise<T> {
    if (clock === systemClock) deadlineQueue(this.timeoutMs).add(this, now)
    else this.#cancelTimer = startTimer(clock, this.timeoutMs, () => this.expire())
    this.#offAbort = onAbort(this.signal, () => this.#settle(false, abortReason(this.signal)))
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

  expire(): void {
    if (!this.#waiting) return
    const error = new ToolError('timeout', `the model did not answer within ${this.timeoutMs} ms`)
    this.#close(error)
    this.#settle(false, error)
  }

  /** Calls the adapter and reacts to its answer: a throw inside `generate` is a failure like a rejection. */
  #ask(model: ModelAdapter, request: AttemptRequest): void {
    let answer: unknown
    try {
      answer = model.generate(request as unknown as ModelRequest)
    } catch (err) {
      this.failed(err)
      return
    }
    // Reactions, not an awaiting function: the smaller of the two while the model thinks.
    Promise.resolve(answer as ModelResponse | PromiseLike<ModelResponse>).then(
      (response) => this.answered(response),
      (err: unknown) => this.failed(err),
    )
  }

  answered(response: ModelResponse): void {
    this.#settle(true, response)
  }

  failed(err: unknown): void {
    this.#settle(false, err)
  }

  #settle(ok: boolean, value: unknown): void {
    if (!this.#waiting) return
    this.#waiting = false
    this.queue?.remove(this)
    this.#cancelTimer()
    this.#offAbort()
    this.#close(SETTLED)
    this.deliver(ok, value)
  }

  /** Settles the promise with what the attempt came to. */
  protected deliver(ok: boolean, value: unknown): void {
    if (ok) this.resolve(value as T)
    else this.reject(value)
  }

  /** Closes the adapter's signal once: with the run's reason if the run aborted first, as LinkedSignal does. */
  #close(reason: unknown): void {
    if (this.#closedWith !== undefined) return
    this.#closedWith = this.signal.aborted ? this.signal.reason : reason
    this.#own?.close(reason)
  }
}

let capturedResolve: (response: never) => void = noop
let capturedReject: (err: unknown) => void = noop
function capture(resolve: (response: never) => void, reject: (err: unknown) => void): void {
  capturedResolve = resolve
  capturedReject = reject
}

function once(
  link: ModelLink,
  request: Omit<ModelRequest, 'signal'>,
  env: ModelCallEnv,
  started: number,
  signal: AbortSource = env.signal,
): Promise<ModelResponse> {
  return new ModelAttempt(signal, env.timeoutMs).start(link.adapter, request, env.clock, started)
}

/** How the report and the events name a failure: "429 rate limited by the provider, Retry-After 2 s". */
export function describeModelFailure(err: unknown): string {
  const wait = (ms: number | undefined) => (ms === undefined ? '' : `, Retry-After ${Number((ms / 1000).toFixed(3))} s`)
  if (ToolError.is(err)) {
    const status = typeof err.details?.status === 'number' ? `${err.details.status} ` : ''
    const said =
      typeof err.details?.providerMessage === 'string' && err.details.providerMessage !== '' ? ` (${err.details.providerMessage})` : ''
    const what = WHAT[err.code]
    return what === undefined ? `${status}${err.message}${wait(err.retryAfterMs)}` : `${status}${what}${said}${wait(err.retryAfterMs)}`
  }
  const e = (typeof err === 'object' && err !== null ? err : {}) as { status?: unknown; statusCode?: unknown }
  const status = typeof e.status === 'number' ? e.status : typeof e.statusCode === 'number' ? e.statusCode : undefined
  const message = err instanceof Error ? err.message : String(err)
  return status === undefined ? message : `${status} ${message}`
}

const CODE = /^[A-Za-z0-9_.-]{1,64}$/

/**
 * A model failure as a low-cardinality code (the `model.call` event's `code`, OpenTelemetry's
 * `error.type`): a ToolError's code, a LoopError's kind, the HTTP status, a Node error code, the
 * error's class name, else `_OTHER`. Never its message: that can hold a secret and is unbounded.
 *
 * @example
 * modelFailureCode(Object.assign(new Error('Service Unavailable'), { status: 503 })) // '503'
 */
export function modelFailureCode(err: unknown): string {
  if (ToolError.is(err)) return err.code
  if (LoopError.is(err)) return err.kind
  if (typeof err !== 'object' || err === null) return '_OTHER'
  const e = err as { status?: unknown; statusCode?: unknown; code?: unknown; name?: unknown }
  const status = typeof e.status === 'number' ? e.status : typeof e.statusCode === 'number' ? e.statusCode : undefined
  if (status !== undefined && Number.isInteger(status) && status >= 100 && status <= 599) return String(status)
  if (typeof e.code === 'string' && CODE.test(e.code)) return e.code
  if (e.name === 'TimeoutError') return 'timeout'
  if (typeof e.name === 'string' && CODE.test(e.name) && e.name !== 'Error') return e.name
  return '_OTHER'
}

const WHAT: Record<string, string> = {
  rate_limited: 'rate limited by the provider',
  overloaded: 'the provider is overloaded',
  upstream_error: 'the provider failed',
  network_error: 'the connection to the provider failed',
}

export interface ModelCallEnv {
  /** The run's signal, or its stop (never made real here unless a backoff must wait on it). */
  readonly signal: AbortSource
  readonly clock: Clock
  readonly random: () => number
  readonly budget: Budget
  readonly log: Logger
  readonly timeoutMs: number
  readonly retry: ModelRetry
  readonly breaker: ModelBreakerOptions
  readonly emit: AgentEventSink
  readonly within: AgentScopeRunner
  readonly runId: string
  readonly turn: number
}

/** Why one model gave up on this call, for the next model and the report. */
interface GaveUp {
  readonly model: string
  readonly error: string
  readonly attempts: number
  readonly circuit: string
  /** The last failure, for `cause`. */
  readonly last: unknown
}

type ModelCallEvent = Extract<AgentEvent, { type: 'model.call' }>

const GAVE_UP = Symbol('model gave up')
const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`

function settle(link: ModelLink, verdict: ModelVerdict, probe: boolean, env: ModelCallEnv, retryAfterMs?: number): void {
  if (link.breaker === undefined) return
  const { state, change } = settleModel(link.breaker, verdict, env.clock.now(), env.breaker, probe, retryAfterMs)
  link.breaker = state
  if (change !== undefined) {
    env.log.warn({ model: link.name, from: change.from, to: change.to, reason: change.reason }, 'model circuit changed')
    env.emit({ type: 'model.circuit', at: env.clock.now(), runId: env.runId, model: link.name, ...change })
  }
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
    event.error = describeModelFailure(failure)
    event.code = modelFailureCode(failure)
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
  return env.within(provider === undefined ? scope : { ...scope, provider }, () => once(link, request, env, started, signal))
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
  return env.within === noScope ? once(link, request, env, started, signal) : attemptWithin(link, attempt, started, request, env, signal)
}

function providerOf(link: ModelLink): string | undefined {
  const provider = (link.adapter as { provider?: unknown }).provider
  return typeof provider === 'string' && provider !== '' ? provider : undefined
}

/** A model's answer, with the link that gave it. */
interface Answered {
  readonly response: ModelResponse
  readonly link: ModelLink
}

type ModelOutcome = Answered | { [GAVE_UP]: GaveUp }

/**
 * A call's first attempt, whose promise is the call's outcome: the answer is checked and told about
 * as it arrives, with no reaction and no promise between the adapter and the loop. A failure goes
 * on in {@link afterFailure} one microtask later, as an awaited attempt's would.
 */
class FirstAttempt extends ModelAttempt<ModelOutcome> {
  constructor(
    readonly link: ModelLink,
    readonly probe: boolean,
    readonly request: Omit<ModelRequest, 'signal'>,
    readonly env: ModelCallEnv,
    readonly started: number,
    readonly only: boolean,
  ) {
    super(env.signal, env.timeoutMs)
  }

  protected override deliver(ok: boolean, value: unknown): void {
    if (ok) this.resolve(firstAnswered(this, value as ModelResponse))
    else this.resolve(Promise.reject(value).then(undefined, (err: unknown) => failed(this, err)))
  }
}

/**
 * Up to `maxAttempts` attempts on one model. Resolves with its answer; throws a hard error (cancel,
 * the step budget, a LoopError of the adapter, a failure that is not transient) as is; gives up
 * (returns a {@link GaveUp}) when the retries are spent, the provider's pushback is past
 * `maxRetryAfterMs`, or its circuit opened.
 *
 * The first attempt is reactions on the adapter's promise, not an awaiting function: a model that
 * answers (nearly every call) costs no suspended frame and one hop less. A failure continues in
 * {@link afterFailure}, which owns the backoff and the later attempts.
 */
function onModel(
  link: ModelLink,
  probe: boolean,
  request: Omit<ModelRequest, 'signal'>,
  env: ModelCallEnv,
  only: false,
  askedAt: number | undefined,
): Promise<ModelOutcome>
function onModel(
  link: ModelLink,
  probe: boolean,
  request: Omit<ModelRequest, 'signal'>,
  env: ModelCallEnv,
  only: true,
  askedAt: number | undefined,
): Promise<Answered>
function onModel(
  link: ModelLink,
  probe: boolean,
  request: Omit<ModelRequest, 'signal'>,
  env: ModelCallEnv,
  only: boolean,
  askedAt: number | undefined,
): Promise<ModelOutcome> {
  let started: number
  try {
    started = beginAttempt(link, probe, env, askedAt)
  } catch (err) {
    return Promise.reject(err)
  }
  if (env.within === noScope)
    return new FirstAttempt(link, probe, request, env, started, only).start(link.adapter, request, env.clock, started)
  // Inside the listener's scope the answer is told about outside it, as the loop goes on.
  const first: First = { link, probe, request, env, started, only }
  let attempt: Promise<ModelResponse>
  try {
    attempt = attemptWithin(link, 1, started, request, env)
  } catch (err) {
    return failed(first, err)
  }
  return attempt.then(
    (response) => firstAnswered(first, response),
    (err: unknown) => failed(first, err),
  )
}

interface First {
  readonly link: ModelLink
  readonly probe: boolean
  readonly request: Omit<ModelRequest, 'signal'>
  readonly env: ModelCallEnv
  readonly started: number
  readonly only: boolean
}

/** The first attempt's answer, checked and told about; an answer that is no response fails the attempt. */
function firstAnswered(first: First, response: ModelResponse): Answered | Promise<ModelOutcome> {
  try {
    return answered(first.link, first.probe, 1, first.started, first.env, response)
  } catch (err) {
    return failed(first, err)
  }
}

/** The first attempt failed: the rest of the call, and for an agent of one model its giving up as the run's error. */
function failed(first: First, err: unknown): Promise<ModelOutcome> {
  const rest = afterFailure(first.link, first.probe, first.request, first.env, 1, first.started, err)
  return first.only ? rest.then(onlyOutcome) : rest
}

/**
 * The checks before an attempt: a cancelled run stops, and the attempt spends its step. Returns when
 * it starts: `at` when the caller read the clock for it a moment ago (the loop, as it built the request).
 */
function beginAttempt(link: ModelLink, probe: boolean, env: ModelCallEnv, at?: number): number {
  if (env.signal.aborted) {
    settle(link, 'neutral', probe, env)
    throw abortReason(env.signal)
  }
  try {
    env.budget.spend('model')
  } catch (err) {
    settle(link, 'neutral', probe, env)
    throw err
  }
  return at ?? env.clock.now()
}

/** An attempt's answer, checked, settled on the breaker and told about; a throw here is the attempt's failure. */
function answered(link: ModelLink, probe: boolean, attempt: number, started: number, env: ModelCallEnv, response: ModelResponse): Answered {
  if (typeof response !== 'object' || response === null) throw new TypeError('the model adapter returned no response object')
  settle(link, 'success', probe, env)
  called(link, attempt, started, env, response, undefined)
  return { response, link }
}

/** What follows a failed attempt: the hard errors, giving up, or the backoff and the next attempts. */
async function afterFailure(
  link: ModelLink,
  probe: boolean,
  request: Omit<ModelRequest, 'signal'>,
  env: ModelCallEnv,
  failedAttempt: number,
  failedStarted: number,
  firstFailure: unknown,
): Promise<ModelOutcome> {
  let isProbe = probe
  let failure = firstFailure
  let started = failedStarted
  for (let attempt = failedAttempt; ; ) {
    if (!env.signal.aborted) called(link, attempt, started, env, undefined, failure)
    if (env.signal.aborted) {
      settle(link, 'neutral', isProbe, env)
      throw abortReason(env.signal)
    }
    if (LoopError.is(failure)) {
      settle(link, 'neutral', isProbe, env)
      throw failure
    }
    const cause = describeModelFailure(failure)
    if (!isTransientModelError(failure)) {
      settle(link, 'neutral', isProbe, env)
      const message = failure instanceof Error ? failure.message : String(failure)
      throw new LoopError('model_failed', `the model call failed after ${plural(attempt, 'attempt')}: ${message}`, {
        cause: failure,
        details: { model: link.name, attempts: attempt, failure: cause },
      })
    }
    const retryAfterMs = ToolError.is(failure) ? failure.retryAfterMs : undefined
    settle(link, 'failure', isProbe, env, retryAfterMs)
    isProbe = false
    const last = failure
    const tries = attempt
    const gaveUp = (why: string): { [GAVE_UP]: GaveUp } => ({
      [GAVE_UP]: { model: link.name, error: `${cause}${why}`, attempts: tries, circuit: link.breaker?.circuit ?? 'none', last },
    })
    if (link.breaker !== undefined && link.breaker.circuit !== 'closed') return gaveUp(`; circuit ${link.breaker.circuit}`)
    if (attempt >= env.retry.maxAttempts) return gaveUp('')
    const floor = retryAfterMs ?? 0
    if (floor > env.retry.maxRetryAfterMs)
      return gaveUp(`; the pushback is past modelRetry.maxRetryAfterMs (${env.retry.maxRetryAfterMs} ms)`)
    // Never sooner than the provider asked; the jitter spreads the clients it pushed back.
    const delay = floor + Math.floor(env.random() * Math.min(env.retry.capMs, env.retry.baseMs * 2 ** (attempt - 1)))
    env.log.warn(
      { model: link.name, attempt, delayMs: delay, code: modelFailureCode(failure), error: lineText.text(cause, 500) },
      'model call failed; retrying',
    )
    env.emit({
      type: 'model.retry',
      at: env.clock.now(),
      runId: env.runId,
      turn: env.turn,
      model: link.name,
      attempt,
      delayMs: delay,
      error: cause,
    })
    try {
      const source = env.signal
      await env.clock.sleep(delay, source instanceof AbortSignal ? source : source.signal)
    } catch {
      throw abortReason(env.signal)
    }
    if (link.breaker !== undefined && link.breaker.circuit !== 'closed') return gaveUp(`; circuit ${link.breaker.circuit}`)
    attempt++
    started = beginAttempt(link, isProbe, env)
    try {
      const response = await (env.within === noScope
        ? once(link, request, env, started)
        : attemptWithin(link, attempt, started, request, env))
      return answered(link, isProbe, attempt, started, env, response)
    } catch (err) {
      failure = err
    }
  }
}

/**
 * Asks the chain's models in order, each with a deadline per attempt and capped full-jitter backoff
 * above the provider's `Retry-After`; a model whose circuit is open is skipped. Every attempt spends
 * a step. Ends as `model_failed` (one model) or `fallback_exhausted` (a chain) when none answers,
 * `cancelled` on abort; a `LoopError` the adapter throws ends the run as it is. `askedAt`, when
 * given, is `env.clock.now()` read by the caller just before: the first attempt starts then.
 */
export function callModel(
  chain: readonly ModelLink[],
  request: Omit<ModelRequest, 'signal'>,
  env: ModelCallEnv,
  askedAt?: number,
): Promise<{ response: ModelResponse; link: ModelLink }> {
  if (chain.length !== 1) return callChain(chain, request, env, askedAt)
  // One model (most agents): no breaker, no fallback, and the adapter's answer reaches the loop in one hop.
  const only = chain[0] as ModelLink
  return onModel(only, false, request, env, true, askedAt)
}

function onlyOutcome(outcome: ModelOutcome): Answered {
  if (GAVE_UP in outcome) throw onlyModelFailed(outcome[GAVE_UP])
  return outcome
}

function onlyModelFailed(only: GaveUp): LoopError {
  const message = only.last instanceof Error ? only.last.message : String(only.last)
  return new LoopError('model_failed', `the model call failed after ${plural(only.attempts, 'attempt')}: ${message}`, {
    cause: only.last,
    details: { attempts: only.attempts, failure: only.error },
  })
}

async function callChain(
  chain: readonly ModelLink[],
  request: Omit<ModelRequest, 'signal'>,
  env: ModelCallEnv,
  askedAt: number | undefined,
): Promise<{ response: ModelResponse; link: ModelLink }> {
  const tried: GaveUp[] = []
  let previous: ModelLink | undefined
  // The loop's clock reading is the first model's; a later model is asked later, and reads the clock.
  let at = askedAt
  for (const link of chain) {
    let probe = false
    if (link.breaker !== undefined) {
      const admission = admitModel(link.breaker, at ?? env.clock.now())
      link.breaker = admission.state
      if (admission.change !== undefined) {
        env.log.info({ model: link.name, ...admission.change }, 'model circuit changed')
        env.emit({ type: 'model.circuit', at: env.clock.now(), runId: env.runId, model: link.name, ...admission.change })
      }
      if (!admission.pass) {
        const wait = admission.retryInMs === undefined ? 'a probe is in flight' : `${Math.ceil(admission.retryInMs)} ms left`
        tried.push({
          model: link.name,
          error: `skipped: circuit ${admission.state.circuit} (${wait})`,
          attempts: 0,
          circuit: admission.state.circuit,
          last: undefined,
        })
        continue
      }
      probe = admission.probe
    }
    if (previous !== undefined || tried.length > 0) {
      const from = tried[tried.length - 1]
      const reason = from === undefined ? 'previous model failed' : `${from.model}: ${from.error}`
      env.log.warn({ from: from?.model, to: link.name, reason }, 'model fallback')
      env.emit({
        type: 'model.fallback',
        at: env.clock.now(),
        runId: env.runId,
        turn: env.turn,
        from: from?.model ?? '',
        to: link.name,
        reason,
      })
    }
    previous = link
    const outcome = await onModel(link, probe, request, env, false, at)
    at = undefined
    if (!(GAVE_UP in outcome)) return outcome
    tried.push(outcome[GAVE_UP])
  }
  const lines = tried.map((t) => `${t.model}: ${t.error}`)
  const last = [...tried].reverse().find((t) => t.last !== undefined)
  throw new LoopError('fallback_exhausted', `every model of the chain was unavailable (${tried.map((t) => t.model).join(', ')})`, {
    ...(last === undefined ? {} : { cause: last.last }),
    details: {
      models: tried.map((t) => ({ model: t.model, attempts: t.attempts, circuit: t.circuit, error: t.error })),
      failure: lines.join('; '),
    },
  })
}
