import { type Json, type RunContext, ToolError, type ToolErrorJSON } from '@shallot/core'

/** Where the calls whose retries ran out live in `run.state`: plain JSON, so a checkpointed run keeps them. */
export const EXHAUSTED_STATE_KEY = 'shallot.retry.exhausted'

/** The most calls kept per run; the oldest is forgotten first. */
const MAX_REMEMBERED = 256

/**
 * How long an exhausted call is answered from its failure without a request, so a model that repeats it does
 * not hammer an upstream that just failed every attempt. Past it the model's repeat gets one request and no
 * retries again: the upstream may have come back.
 */
export const ANSWER_FROM_FAILURE_MS = 60_000

/**
 * One call whose retries ran out: when, and the error every attempt gave. No error when the attempts failed in
 * different ways (a 503, then a hang: not a dead upstream) or in a run checkpointed before failures were kept.
 */
export interface ExhaustedCall {
  readonly fingerprint: string
  readonly at: number
  readonly error?: ToolErrorJSON
}

const CATEGORIES: ReadonlySet<unknown> = new Set(['transient', 'recoverable', 'user', 'fatal'])

function isErrorJson(value: unknown): value is ToolErrorJSON {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false
  const { code, message, category } = value as Record<string, unknown>
  return typeof code === 'string' && /^[a-z][a-z0-9_]*$/.test(code) && typeof message === 'string' && CATEGORIES.has(category)
}

function entryOf(item: unknown): ExhaustedCall | undefined {
  // A run checkpointed by an earlier release holds bare fingerprints: remembered, with no failure to answer from.
  if (typeof item === 'string') return { fingerprint: item, at: Number.NEGATIVE_INFINITY }
  if (typeof item !== 'object' || item === null || Array.isArray(item)) return undefined
  const { fingerprint, at, error } = item as Record<string, unknown>
  if (typeof fingerprint !== 'string' || typeof at !== 'number' || !Number.isFinite(at)) return undefined
  if (!isErrorJson(error)) return { fingerprint, at }
  const { code, category, message } = error
  return { fingerprint, at, error: { code, category, message, retryable: false, safeToRepeat: false } }
}

function listOf(run: RunContext): ExhaustedCall[] {
  const value: Json | undefined = run.state[EXHAUSTED_STATE_KEY]
  // A planted or hand-edited value is read as an empty list: the worst it can cost is a retry.
  if (!Array.isArray(value)) return []
  return value.map(entryOf).filter((entry): entry is ExhaustedCall => entry !== undefined)
}

function stored(entry: ExhaustedCall): Json {
  return (entry.error === undefined ? { fingerprint: entry.fingerprint, at: entry.at } : { ...entry }) as unknown as Json
}

/**
 * Rebuilds the failure a call was answered with, for the model's identical repeat: the same code and
 * message, not retryable (nothing outside may repeat it), and a hint that names what was done and what can work.
 */
export function failureFrom(entry: ExhaustedCall & { error: ToolErrorJSON }, tool: string, sinceMs: number): ToolError {
  const { error } = entry
  return new ToolError(error.code, error.message, {
    category: error.category,
    retryable: false,
    safeToRepeat: false,
    hint:
      `${tool} failed every retry with these arguments ${Math.round(sinceMs / 1000)} s ago in this run, so this repeat was ` +
      'not sent to the upstream. Use another tool or source, change the arguments, or tell the user it is unavailable.',
    details: { answeredFromFailure: true, exhaustedAt: entry.at },
  })
}

/**
 * The error a call ends with when every attempt failed the same way and its identical repeat will be answered
 * from this failure: the same code, message and `safeToRepeat`, but no `retryAfterMs` and a hint
 * that does not invite the repeat — the model is told one thing, and the stack does what it said.
 */
export function ranOutOn(error: ToolError, tool: string, attempts: number): ToolError {
  return new ToolError(error.code, error.message, {
    category: error.category,
    retryable: false,
    safeToRepeat: error.safeToRepeat,
    hint:
      `${tool} failed all ${attempts} attempts with these arguments (${error.code}); the identical call will not be sent ` +
      'again for a minute. Use another tool or source, change the arguments, or tell the user it is unavailable.',
    ...(error.details === undefined ? {} : { details: error.details }),
    cause: error,
  })
}

/**
 * Calls of one run whose retries ran out (identified by `ctx.fingerprint`: tool + canonical arguments).
 * An identical call later in the run is answered from that failure for {@link ANSWER_FROM_FAILURE_MS}, then
 * gets one request and no retries.
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
    has(fingerprint: string): boolean {
      return listOf(run).some((entry) => entry.fingerprint === fingerprint)
    },
    add(fingerprint: string, at: number, error: ToolError | undefined): void {
      const list = listOf(run).filter((entry) => entry.fingerprint !== fingerprint)
      if (error === undefined) list.push({ fingerprint, at })
      else {
        const { code, category, message } = error
        list.push({ fingerprint, at, error: { code, category, message, retryable: false, safeToRepeat: false } })
      }
      run.state[EXHAUSTED_STATE_KEY] = list.slice(-MAX_REMEMBERED).map(stored)
    },
    delete(fingerprint: string): void {
      const list = listOf(run)
      if (list.some((entry) => entry.fingerprint === fingerprint))
        run.state[EXHAUSTED_STATE_KEY] = list.filter((entry) => entry.fingerprint !== fingerprint).map(stored)
    },
  }
}
