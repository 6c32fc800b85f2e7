import type { Json, RunContext, ToolErrorJSON } from '@shallot/core'

/** Where the calls whose retries ran out live in `run.state`: plain JSON, so a checkpointed run keeps them. */
export const EXHAUSTED_STATE_KEY = 'shallot.retry.exhausted'

/** The most calls kept per run; the oldest is forgotten first. */
const MAX_REMEMBERED = 256

/** The cooldown after two failed requests; it doubles with each further failure (see {@link probeCooldownMs}). */
export const PROBE_BASE_MS = 1_000

/** The longest cooldown, however many requests failed: past it an upstream that came back is found within this long. */
export const MAX_PROBE_COOLDOWN_MS = 10 * 60_000

/**
 * How long after the last failed request of a call its identical repeat waits before it may be sent again: a
 * cooldown that doubles with each failed request (1 s after 2, 2 s after 3, 4 s after 4, … up to
 * {@link MAX_PROBE_COOLDOWN_MS}), never shorter than the last failure's `Retry-After`. The breaker's half-open
 * idea for one call: a run of failures the world heals from costs one request per cooldown, and a dead upstream
 * is asked less and less often.
 *
 * @example
 * probeCooldownMs(3, undefined) // 2000
 * probeCooldownMs(3, 5000)      // 5000: the service said when
 */
export function probeCooldownMs(failures: number, retryAfterMs: number | undefined): number {
  const grown = Math.min(MAX_PROBE_COOLDOWN_MS, PROBE_BASE_MS * 2 ** Math.max(0, Math.min(failures, 30) - 2))
  return retryAfterMs !== undefined && retryAfterMs > grown ? Math.min(retryAfterMs, MAX_PROBE_COOLDOWN_MS) : grown
}

/**
 * One call whose retries ran out. `sentAt`: when its last failed request was sent (the cooldown runs from there:
 * at most one request per cooldown reaches an upstream that keeps failing, however long each took to fail).
 * `failures`: its failed requests in a row, probes included. `error`: the failure every request gave; none when
 * they failed in different ways (a 503, then a hang: not a dead upstream), so the repeat is sent at once.
 */
export interface ExhaustedCall {
  readonly fingerprint: string
  readonly sentAt: number
  readonly failures: number
  readonly error?: ToolErrorJSON
}

const CATEGORIES: ReadonlySet<unknown> = new Set(['transient', 'recoverable', 'user', 'fatal'])

function isErrorJson(value: unknown): value is ToolErrorJSON {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false
  const { code, message, category } = value as Record<string, unknown>
  return typeof code === 'string' && /^[a-z][a-z0-9_]*$/.test(code) && typeof message === 'string' && CATEGORIES.has(category)
}

/** The stored failure, read field by field: only the facts a repeat is answered from. */
function errorOf(error: ToolErrorJSON): ToolErrorJSON {
  const { code, category, message, safeToRepeat, retryAfterMs } = error
  const wait = typeof retryAfterMs === 'number' && Number.isFinite(retryAfterMs) && retryAfterMs > 0 ? { retryAfterMs } : {}
  return { code, category, message, retryable: false, safeToRepeat: safeToRepeat === true, ...wait }
}

// A run checkpointed before the cooldown grew holds `at` (when the call ran out) and no count: read as retry's default 3 attempts.
const LEGACY_FAILURES = 3

function entryOf(item: unknown): ExhaustedCall | undefined {
  // A run checkpointed under an older release holds bare fingerprints: remembered, with no failure to answer from.
  if (typeof item === 'string') return { fingerprint: item, sentAt: Number.NEGATIVE_INFINITY, failures: 1 }
  if (typeof item !== 'object' || item === null || Array.isArray(item)) return undefined
  const { fingerprint, sentAt, at, failures, error } = item as Record<string, unknown>
  const when = sentAt ?? at
  if (typeof fingerprint !== 'string' || typeof when !== 'number' || !Number.isFinite(when)) return undefined
  const count = typeof failures === 'number' && Number.isInteger(failures) && failures >= 1 ? Math.min(failures, 1000) : LEGACY_FAILURES
  const entry = { fingerprint, sentAt: when, failures: count }
  return isErrorJson(error) ? { ...entry, error: errorOf(error) } : entry
}

function listOf(run: RunContext): ExhaustedCall[] {
  const value: Json | undefined = run.state[EXHAUSTED_STATE_KEY]
  // A planted or hand-edited value is read as an empty list: the worst it can cost is a retry.
  if (!Array.isArray(value)) return []
  return value.map(entryOf).filter((entry): entry is ExhaustedCall => entry !== undefined)
}

const stored = (entry: ExhaustedCall): Json => ({ ...entry }) as unknown as Json

/**
 * Calls of one run whose retries ran out (identified by `ctx.fingerprint`: tool + canonical arguments), for the
 * model's identical repeat: answered from the failure within its cooldown, then sent once (a probe).
 *
 * @example
 * const exhausted = exhaustedCalls(ctx.run)
 * const entry = exhausted.get(ctx.fingerprint)
 */
export function exhaustedCalls(run: RunContext) {
  return {
    get(fingerprint: string): ExhaustedCall | undefined {
      return listOf(run).find((entry) => entry.fingerprint === fingerprint)
    },
    set(entry: ExhaustedCall): void {
      const list = listOf(run).filter((other) => other.fingerprint !== entry.fingerprint)
      list.push(entry.error === undefined ? entry : { ...entry, error: errorOf(entry.error) })
      run.state[EXHAUSTED_STATE_KEY] = list.slice(-MAX_REMEMBERED).map(stored)
    },
    delete(fingerprint: string): void {
      const list = listOf(run)
      if (list.some((entry) => entry.fingerprint === fingerprint))
        run.state[EXHAUSTED_STATE_KEY] = list.filter((entry) => entry.fingerprint !== fingerprint).map(stored)
    },
  }
}
