/**
 * The simulated upstreams the tools call, with the fault schedule applied and a ledger of every side
 * effect that really happened. One world per episode. Errors are thrown the way a typical HTTP
 * client throws them (a status and headers, or undici's "fetch failed" with an errno cause), so
 * each framework reads them as it would read a real one.
 */
import type { FaultSchedule, ToolFault } from './faults.js'

export type Effect = 'read' | 'write'

export interface ToolOptions {
  readonly signal?: AbortSignal | undefined
  /** Forwarded as an `Idempotency-Key` header; the upstreams honour it as Stripe does. */
  readonly idempotencyKey?: string | undefined
}

/** A side effect the world saw: which write, and with what arguments. */
export interface LedgerEntry {
  readonly tool: string
  readonly args: string
  readonly at: number
}

export interface TraceLine {
  readonly at: number
  readonly text: string
}

const LATENCY_MS = 150
const CLIENT_TIMEOUT_MS = 30_000
/** How long a `model_503_30s` outage lasts, from its first request. */
const MODEL_OUTAGE_MS = 30_000
/** How long a `model_429_ra120` rate limit lasts, as its Retry-After says. */
const MODEL_RATE_WINDOW_MS = 120_000

class UpstreamHttpError extends Error {
  constructor(
    readonly status: number,
    statusText: string,
    readonly headers: Record<string, string>,
    url: string,
  ) {
    super(`${url} answered ${status} ${statusText}`)
    this.name = 'UpstreamHttpError'
  }
}

function fetchFailed(code: string, url: string): Error {
  const cause = Object.assign(new Error(`${code === 'ECONNRESET' ? 'read' : 'connect'} ${code} ${url}`), { code })
  return new TypeError('fetch failed', { cause })
}

function timedOut(): Error {
  const error = new Error('The operation was aborted due to timeout')
  error.name = 'TimeoutError'
  return Object.assign(error, { code: 23 })
}

function wait(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason)
    const onAbort = () => {
      clearTimeout(timer)
      reject(signal?.reason)
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}

/** Never settles, unless the caller aborts. */
function never(signal: AbortSignal | undefined): Promise<never> {
  return new Promise((_, reject) => {
    if (signal?.aborted) return reject(signal.reason)
    signal?.addEventListener('abort', () => reject(signal.reason), { once: true })
  })
}

export class World {
  readonly ledger: LedgerEntry[] = []
  readonly trace: TraceLine[] = []
  executions = 0
  modelRequests = 0
  readonly #requests = new Map<string, number>()
  readonly #keys = new Map<string, unknown>()
  /** The service's own records of the writes it made: what a list endpoint can search without a key. */
  readonly #records: Array<{ tool: string; args: string; createdAt: number; answer: unknown }> = []

  constructor(
    readonly schedule: FaultSchedule,
    readonly now: () => number,
  ) {}

  note(text: string): void {
    this.trace.push({ at: this.now(), text })
  }

  /** Until when (episode ms) every model request answers 503: a `model_503_30s` outage under way. */
  #modelDownUntil = Number.NEGATIVE_INFINITY
  /** Until when (episode ms) the provider refuses with 429: the window a `model_429_ra120` announced. */
  #modelLimitedUntil = Number.NEGATIVE_INFINITY

  /**
   * The model fault of the k-th model request (1-based), counting it. Inside an outage, a 503; inside a rate-limit
   * window, a 429 whose Retry-After is what is left of the window (the provider means what it said).
   */
  nextModelFault(): { k: number; fault: string | undefined; retryAfterSeconds?: number } {
    this.modelRequests++
    const k = this.modelRequests
    const scheduled = this.schedule.model[k - 1]
    const now = this.now()
    if (scheduled === 'model_503_30s') this.#modelDownUntil = now + MODEL_OUTAGE_MS
    if (scheduled === 'model_429_ra120') this.#modelLimitedUntil = now + MODEL_RATE_WINDOW_MS
    if (now < this.#modelLimitedUntil)
      return { k, fault: 'model_429_ra120', retryAfterSeconds: Math.ceil((this.#modelLimitedUntil - now) / 1000) }
    if (now < this.#modelDownUntil) return { k, fault: 'model_503' }
    return { k, fault: scheduled }
  }

  /** One request to a tool's upstream: the schedule decides its fate; `apply` is the effect and its answer. */
  async request(tool: string, effect: Effect, args: unknown, options: ToolOptions, apply: () => unknown): Promise<unknown> {
    this.executions++
    const k = (this.#requests.get(tool) ?? 0) + 1
    this.#requests.set(tool, k)
    const url = `https://${tool.replace(/_/g, '-')}.example/api`
    const fault: ToolFault | 'dead' | undefined = this.schedule.dead.includes(tool) ? 'dead' : this.schedule.tools[tool]?.[k - 1]
    const argText = JSON.stringify(args)
    this.note(
      `tool ${tool}#${k} ${argText}${options.idempotencyKey ? ` key=${options.idempotencyKey.slice(0, 12)}…` : ''}${fault ? ` ← fault ${fault}` : ''}`,
    )
    await wait(LATENCY_MS, options.signal)
    switch (fault) {
      case 'transient_503':
        throw new UpstreamHttpError(503, 'Service Unavailable', { 'retry-after': '2' }, url)
      case 'rate_limited_429':
        throw new UpstreamHttpError(429, 'Too Many Requests', { 'retry-after': '5' }, url)
      case 'dead':
        throw new UpstreamHttpError(503, 'Service Unavailable', {}, url)
      case 'reset':
        throw fetchFailed('ECONNRESET', url)
      case 'write_refused':
        throw fetchFailed('ECONNREFUSED', url)
      case 'hang':
        return never(options.signal)
      default:
    }
    const answer = effect === 'write' ? this.#write(tool, argText, options, apply) : apply()
    if (fault === 'write_reset_after_effect') throw fetchFailed('ECONNRESET', url)
    if (fault === 'write_timeout_after_effect') {
      await wait(CLIENT_TIMEOUT_MS, options.signal)
      throw timedOut()
    }
    return answer
  }

  /**
   * The service's read endpoint: what the write made under this key answered, or `undefined` when
   * none landed. A request (counted in `executions`, traced), never an effect, and never faulted:
   * the schedule names the write's own requests only.
   */
  async lookup(tool: string, key: string | undefined, options: ToolOptions): Promise<unknown> {
    this.executions++
    this.note(`lookup ${tool} key=${key === undefined ? '(none)' : `${key.slice(0, 12)}…`}`)
    await wait(LATENCY_MS, options.signal)
    const found = key === undefined ? undefined : this.#keys.get(key)
    this.note(`  upstream ${tool}: ${found === undefined ? 'no write under that key' : 'found the write under that key'}`)
    return found
  }

  /**
   * The service's list endpoint, as a service without keys offers it ("refunds of payment X",
   * "tickets with this title", created at or after `since`, a wall-clock time in ms): the answer of
   * the newest write of `tool` with exactly these arguments, or `undefined`. A request (counted in
   * `executions`, traced), never an effect, and never faulted.
   */
  async search(tool: string, args: unknown, since: number, options: ToolOptions): Promise<unknown> {
    this.executions++
    const argText = JSON.stringify(args)
    this.note(`search ${tool} ${argText} created since ${((Date.now() - since) / 1000).toFixed(3)} s ago`)
    await wait(LATENCY_MS, options.signal)
    const found = this.#records.findLast((record) => record.tool === tool && record.args === argText && record.createdAt >= since)
    this.note(`  upstream ${tool}: ${found === undefined ? 'no such write since then' : 'found the write'}`)
    return found?.answer
  }

  #write(tool: string, argText: string, options: ToolOptions, apply: () => unknown): unknown {
    const key = options.idempotencyKey
    if (key !== undefined && this.#keys.has(key)) {
      this.note(`  upstream ${tool}: key seen, stored answer replayed, no new effect`)
      return this.#keys.get(key)
    }
    this.ledger.push({ tool, args: argText, at: this.now() })
    this.note(`  EFFECT ${tool} ${argText} (effect #${this.ledger.filter((e) => e.tool === tool && e.args === argText).length})`)
    const answer = apply()
    this.#records.push({ tool, args: argText, createdAt: Date.now(), answer })
    if (key !== undefined) this.#keys.set(key, answer)
    return answer
  }

  /** Writes that landed more than once with the same arguments. */
  duplicates(): number {
    const seen = new Map<string, number>()
    for (const entry of this.ledger) seen.set(`${entry.tool} ${entry.args}`, (seen.get(`${entry.tool} ${entry.args}`) ?? 0) + 1)
    let extra = 0
    for (const count of seen.values()) extra += count - 1
    return extra
  }
}
