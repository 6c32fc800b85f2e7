import type { Backoff } from './backoff.js'

const stop: Backoff = { next: () => 'stop' }

/**
 * Never repeats: the first failure goes straight back to the model. (For repeats without waiting use `constant(0)`.)
 *
 * @example
 * retry({ backoff: none() }) // e.g. per tool, for a tool that must never be called twice
 */
export function none(): Backoff {
  return stop
}
