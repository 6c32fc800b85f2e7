import type { z } from 'zod'
import { parseOptions } from './options.js'

/**
 * {@link parseOptions} bound to its owner and schema, made once beside a factory: every call
 * validates what it is given, and no options at all parses to the defaults, a fresh object each
 * time, so no caller can change what the next one gets.
 *
 * @example
 * const parse = optionsParser('timeout()', timeoutOptionsSchema)
 * export function timeout(options?: TimeoutOptions) {
 *   const { ms } = parse(options)
 * }
 */
export function optionsParser<S extends z.ZodType>(owner: string, schema: S): (input: unknown) => z.output<S> {
  return (input) => parseOptions(owner, schema, input)
}
