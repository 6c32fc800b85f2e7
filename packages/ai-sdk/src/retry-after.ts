/** Longest server pushback a model error carries by default: past this the run's own ceiling decides. */
export const DEFAULT_MAX_RETRY_AFTER_MS = 60_000

function header(headers: unknown, name: string): string | undefined {
  if (typeof headers !== 'object' || headers === null) return undefined
  for (const [key, value] of Object.entries(headers as Record<string, unknown>)) {
    if (key.toLowerCase() === name && typeof value === 'string') return value.trim()
  }
  return undefined
}

/** A non-negative decimal number, nothing else: `Number('')` is 0 and `Number('0x10')` is 16, neither is a wait. */
const DECIMAL = /^\d+(?:\.\d+)?$/

/**
 * The wait a response asks for, in ms: `retry-after-ms` (OpenAI), else `retry-after` as seconds or
 * an HTTP date (relative to `now`). A value that is not a finite, non-negative number is ignored;
 * a date in the past is 0; anything longer than `maxMs` is clamped to it.
 */
export function retryAfterFromHeaders(headers: unknown, now: () => number, maxMs: number): number | undefined {
  const ms = header(headers, 'retry-after-ms')
  if (ms !== undefined && DECIMAL.test(ms)) return clamp(Number(ms), maxMs)
  const after = header(headers, 'retry-after')
  if (after === undefined || after === '') return undefined
  if (DECIMAL.test(after)) return clamp(Number(after) * 1000, maxMs)
  // An HTTP date always names a weekday or month; a bare number-like string that failed DECIMAL ("-5", "1e3") is not one.
  if (!/[a-z]/i.test(after)) return undefined
  const at = Date.parse(after)
  if (!Number.isFinite(at)) return undefined
  return clamp(at - now(), maxMs)
}

/** `ms` comes from a DECIMAL string, so Infinity is only a number too long to represent: the longest wait. */
function clamp(ms: number, maxMs: number): number | undefined {
  if (Number.isNaN(ms)) return undefined
  return Math.min(Math.max(0, Math.ceil(ms)), maxMs)
}
