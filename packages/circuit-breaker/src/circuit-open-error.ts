import { ToolError } from '@shallot/core'

export interface CircuitOpenFacts {
  /** The tool the model asked for. */
  tool: string
  /** The breaker's key (the tool's name unless a `key` function says otherwise). */
  key: string
  /** `open`, or `half-open` with every probe slot taken. */
  circuit: 'open' | 'half-open'
  /** Failures behind the opening. */
  failures: number
  /** How long until a call could get through, when known. */
  retryAfterMs: number | undefined
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`

/**
 * The soft refusal of a call whose circuit is open: the model reads it, routes around the tool,
 * and knows when it is worth asking again. `transient` because the condition heals by itself;
 * `retryable: false` because the retry layer sits inside the breaker and must not spin on it;
 * `safeToRepeat: true` because the call never reached the tool.
 *
 * @example
 * throw circuitOpenError({ tool: 'search', key: 'search', circuit: 'open', failures: 2, retryAfterMs: 30_000 })
 * // tool 'search' temporarily unavailable: circuit breaker open after 2 failures. Use a different approach or report you cannot proceed.
 */
export function circuitOpenError(facts: CircuitOpenFacts): ToolError {
  const { tool, key, circuit, failures, retryAfterMs } = facts
  const subject = key === tool ? `tool '${tool}'` : `tool '${tool}' (${key})`
  const why =
    circuit === 'open'
      ? `circuit breaker open after ${plural(failures, 'failure')}`
      : `circuit breaker half-open after ${plural(failures, 'failure')}, a recovery probe is already running`
  const wait = retryAfterMs === undefined ? undefined : Math.max(1, Math.ceil(retryAfterMs))
  return new ToolError(
    'circuit_open',
    `${subject} temporarily unavailable: ${why}. Use a different approach or report you cannot proceed.`,
    {
      category: 'transient',
      retryable: false,
      safeToRepeat: true,
      ...(wait === undefined ? {} : { retryAfterMs: wait, hint: `it may be available again in ${Math.ceil(wait / 1000)}s` }),
      details: { key, circuit, failures },
    },
  )
}
