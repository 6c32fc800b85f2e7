import { retryAfterFromHeaders } from './index.js'

/** The wait a provider's 429 or 503 asks for, in ms, or undefined when it asks for none. */
export function pushbackOf(response: { headers: Headers }): number | undefined {
  return retryAfterFromHeaders(response.headers, { now: Date.now(), maxMs: 60_000 })
}
