import { parseOptions } from '@shallot/core'
import { z } from 'zod'
import { type Backoff, delayMsSchema } from './backoff.js'

const constantSchema = z.object({ ms: delayMsSchema }).strict()

/**
 * The same delay before every repeat. `constant(0)` repeats at once.
 *
 * @example
 * retry({ backoff: constant(1000), maxAttempts: 2 })
 */
export function constant(ms: number): Backoff {
  const { ms: delayMs } = parseOptions('constant()', constantSchema, { ms })
  return { capMs: delayMs, next: () => delayMs }
}
