import { nanoid } from 'nanoid'

/**
 * A run's id: 12 characters of nanoid's URL-safe alphabet from the system's secure random source,
 * 72 bits.
 *
 * @example
 * newRunId() // 'V1StGXR8_Z5j'
 */
export const newRunId = (): string => nanoid(12)

/**
 * The id of a tool call that came without one: 10 characters of the same alphabet.
 *
 * @example
 * newCallId() // 'IRFa-VaY2b'
 */
export const newCallId = (): string => nanoid(10)
