import { type AnyTool, type Clock, defineTool, systemClock, type ToolDefinition, type ToolExecuteContext } from '@shallot/core'
import { withoutStackTrace } from '@shallot/core/kit'
import { seededRandom } from './seeded-random.js'

/** The faults chaos can inject, each thrown in the shape real clients throw it. */
export type FaultKind = 'timeout' | 'rate_limit' | 'server_error' | 'bad_gateway' | 'connection_reset' | 'connection_refused' | 'crash'

export interface ChaosOptions {
  seed?: number
  /** Probability in [0, 1] that a call fails. Default 0. */
  failRate?: number
  /** Which faults to draw from when a call fails. Default: every kind except `crash`. */
  errors?: readonly FaultKind[]
  /** Latency added before each call: a number, or `[min, max]` drawn uniformly. */
  latencyMs?: number | readonly [number, number]
  /** A fixed outcome per call, in order, used before random draws (`'ok'` or a fault kind). */
  script?: ReadonlyArray<'ok' | FaultKind>
  /** The clock latency and hangs run on. Default: the real clock. */
  clock?: Clock
  /** `retry-after` seconds on injected 429s. */
  retryAfterSeconds?: number
  /**
   * `false` builds injected faults without a stack trace. For simulations that throw thousands of faults
   * and show none: capturing a trace through optimized frames costs more than a dozen simulated calls.
   * Default `true`, so a fault in a test failure says where it was thrown.
   */
  stackTraces?: boolean
}

export interface ChaosStats {
  calls: number
  failures: number
  successes: number
  byKind: Partial<Record<FaultKind, number>>
}

/** Builds the error a real HTTP client, Node socket or buggy tool would throw for `kind`. */
export function faultError(kind: FaultKind, retryAfterSeconds = 1): unknown {
  const httpError = (status: number, message: string, headers: Record<string, string> = {}) =>
    Object.assign(new Error(message), { name: 'HTTPError', status, headers })
  const errno = (code: string, message: string) => Object.assign(new Error(message), { code, errno: code, syscall: 'connect' })
  switch (kind) {
    case 'rate_limit':
      return httpError(429, 'Too Many Requests', { 'retry-after': String(retryAfterSeconds) })
    case 'server_error':
      return httpError(503, 'Service Unavailable')
    case 'bad_gateway':
      return httpError(502, 'Bad Gateway')
    case 'connection_reset':
      return errno('ECONNRESET', 'read ECONNRESET')
    case 'connection_refused':
      return errno('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:443')
    case 'crash':
      return new TypeError("Cannot read properties of undefined (reading 'id')")
    case 'timeout':
      return Object.assign(new Error('The operation was aborted due to timeout'), { name: 'TimeoutError', code: 23 })
  }
}

const isThenable = (value: unknown): value is PromiseLike<unknown> => typeof (value as PromiseLike<unknown> | null)?.then === 'function'

const DEFAULT_KINDS: readonly FaultKind[] = [
  'timeout',
  'rate_limit',
  'server_error',
  'bad_gateway',
  'connection_reset',
  'connection_refused',
]

/**
 * Wraps a real tool with deterministic fault and latency injection. A `timeout` fault hangs until
 * the call's signal aborts (so the timeout layer has something to time out). Faults and latency
 * answer through a promise; a call without either answers as the wrapped tool does (its value,
 * promise or throw), counted as a success once it has a value.
 *
 * @example
 * const flaky = chaosTool(search, { seed: 7, failRate: 0.3, errors: ['server_error', 'timeout'], clock })
 * flaky.stats // { calls, failures, successes, byKind }
 */
export function chaosTool<T extends AnyTool>(
  tool: T,
  options: ChaosOptions = {},
): ToolDefinition<T['input']> & { readonly stats: ChaosStats } {
  const failRate = options.failRate ?? 0
  if (!(failRate >= 0 && failRate <= 1)) throw new TypeError(`chaosTool(): failRate must be between 0 and 1, got ${failRate}`)
  const kinds = options.errors ?? DEFAULT_KINDS
  if (kinds.length === 0) throw new TypeError('chaosTool(): errors must name at least one fault kind')
  if (options.stackTraces !== undefined && typeof options.stackTraces !== 'boolean')
    throw new TypeError(`chaosTool(): stackTraces must be true or false, got ${String(options.stackTraces)}`)
  const fault =
    options.stackTraces === false
      ? (kind: FaultKind, retryAfterSeconds: number | undefined) => withoutStackTrace(faultError, kind, retryAfterSeconds)
      : faultError
  const random = seededRandom(options.seed ?? 1)
  const clock = options.clock ?? systemClock
  const script = options.script ?? []
  const stats: ChaosStats = { calls: 0, failures: 0, successes: 0, byKind: {} }
  const latency = () => {
    const l = options.latencyMs
    if (l === undefined) return 0
    return typeof l === 'number' ? l : l[0] + random() * (l[1] - l[0])
  }
  const succeeded = (value: unknown) => {
    stats.successes++
    return value
  }
  // Not async: a call that draws neither latency nor a fault answers as the tool it wraps does, synchronously
  // for a synchronous tool, so the stack keeps its fast path and `shallot sim` pays no promise per step.
  const answer = (planned: 'ok' | FaultKind | undefined, args: unknown, context: ToolExecuteContext): unknown => {
    if (planned === 'ok' || planned === undefined) {
      const value: unknown = tool.execute(args, context)
      return isThenable(value) ? Promise.resolve(value).then(succeeded) : succeeded(value)
    }
    stats.failures++
    stats.byKind[planned] = (stats.byKind[planned] ?? 0) + 1
    // A timeout hangs like a stuck upstream until someone gives up on us.
    if (planned === 'timeout')
      return clock.sleep(Number.MAX_SAFE_INTEGER, context.signal).then(() => Promise.reject(fault(planned, options.retryAfterSeconds)))
    return Promise.reject(fault(planned, options.retryAfterSeconds))
  }
  const wrapped = defineTool({
    name: tool.name,
    description: tool.description,
    input: tool.input,
    effect: tool.effect,
    execute(args, context) {
      const n = stats.calls++
      const planned = script[n] ?? (random() < failRate ? kinds[Math.floor(random() * kinds.length)] : 'ok')
      const wait = latency()
      if (wait > 0) return clock.sleep(wait, context.signal).then(() => answer(planned, args, context))
      return answer(planned, args, context)
    },
  })
  return { ...wrapped, stats }
}
