import { type HeaderSource, headerOf } from './error-facts.js'

/** Inputs for {@link parseRetryAfter} and {@link retryAfterFromHeaders}. */
export interface RetryAfterOptions {
  /** Wall-clock epoch milliseconds that an HTTP date is measured from. */
  now: number
  /** Longest wait ever returned; longer values are clamped to it. */
  maxMs: number
}

// Any number of digits: a server asking for longer than a number can say means long, and is clamped to maxMs, not ignored.
const SECONDS = /^\d+(?:\.\d+)?$/
// An HTTP date starts with a day name (IMF-fixdate, RFC 850 and asctime all do); anything else is
// refused before Date.parse, which would read "-1" or "12" as a year.
const HTTP_DATE = /^[A-Za-z]{3,9},? [ -~]{10,40}$/

function clamp(ms: number, maxMs: number): number {
  return Math.min(Math.ceil(ms), maxMs)
}

/**
 * Reads a `Retry-After` header (seconds, or an HTTP date measured from `now`) as milliseconds,
 * clamped to `maxMs`. Returns `undefined` for anything unusable: negative or non-numeric values,
 * `1e309`, dates in the past, unparseable dates.
 *
 * @example
 * parseRetryAfter('7', { now: Date.now(), maxMs: 60_000 }) // 7000
 * parseRetryAfter('Wed, 21 Oct 2015 07:28:00 GMT', { now: Date.parse('Wed, 21 Oct 2015 07:27:30 GMT'), maxMs: 60_000 }) // 30000
 */
export function parseRetryAfter(value: unknown, { now, maxMs }: RetryAfterOptions): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? clamp(value * 1000, maxMs) : undefined
  if (typeof value !== 'string') return undefined
  const text = value.trim()
  if (SECONDS.test(text)) return clamp(Number(text) * 1000, maxMs)
  if (!HTTP_DATE.test(text)) return undefined
  const at = Date.parse(text)
  if (!Number.isFinite(at) || !Number.isFinite(now)) return undefined
  const wait = at - now
  return wait > 0 ? clamp(wait, maxMs) : undefined
}

/**
 * Reads a `retry-after-ms` header (OpenAI and Anthropic send it): non-negative milliseconds, clamped to `maxMs`.
 *
 * @example
 * parseRetryAfterMs('1500', 60_000) // 1500
 */
export function parseRetryAfterMs(value: unknown, maxMs: number): number | undefined {
  const text = typeof value === 'number' ? String(value) : typeof value === 'string' ? value.trim() : ''
  if (!SECONDS.test(text)) return undefined
  return clamp(Number(text), maxMs)
}

/**
 * The wait a response's headers ask for, in ms: `retry-after-ms` (OpenAI, Anthropic) when it is a
 * number, else `Retry-After` as seconds or an HTTP date measured from `now`; clamped to `maxMs`.
 * Reads a `Headers` object (its `get`) or a plain record, case-insensitively. `undefined` when
 * neither header holds a usable wait (missing, negative, `NaN`, `0x10`, a date in the past).
 * shallot's one Retry-After parser: the classifier, `@shallot/ai-sdk` and `@shallot/langchain` read
 * provider pushback with it, so one header means one wait wherever the model is asked from.
 *
 * @example
 * retryAfterFromHeaders(new Headers({ 'retry-after': '7' }), { now: Date.now(), maxMs: 60_000 }) // 7000
 * retryAfterFromHeaders({ 'Retry-After-Ms': '1500', 'Retry-After': '2' }, { now: Date.now(), maxMs: 60_000 }) // 1500
 */
export function retryAfterFromHeaders(headers: unknown, options: RetryAfterOptions): number | undefined {
  if (typeof headers !== 'object' || headers === null) return undefined
  const source = headers as HeaderSource
  const ms = parseRetryAfterMs(headerOf(source, 'retry-after-ms'), options.maxMs)
  return ms ?? parseRetryAfter(headerOf(source, 'retry-after'), options)
}
