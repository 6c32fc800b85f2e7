import type { z } from 'zod'
import { parseOptions } from './options.js'

/** Plain data all the way down: primitives, arrays and plain objects, nothing that could change behind a freeze. */
function isData(value: unknown, depth = 0): boolean {
  if (typeof value !== 'object' || value === null) return typeof value !== 'function' && typeof value !== 'symbol'
  if (depth > 20) return false
  if (Array.isArray(value)) return value.every((item) => isData(item, depth + 1))
  const proto = Object.getPrototypeOf(value)
  if (proto !== Object.prototype && proto !== null) return false
  return Object.values(value).every((item) => isData(item, depth + 1))
}

function freeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const item of Object.values(value)) freeze(item)
    Object.freeze(value)
  }
  return value
}

/**
 * {@link parseOptions} for a constructor called again and again (a fresh stack per run, per tenant, per
 * simulated run): no options at all (`undefined`) is parsed once, and every later call without options
 * gets that same deep-frozen result. Any options object is validated on every call, so one that was
 * changed after an earlier call (or a frozen one) is checked again. Defaults that are not plain data
 * (a function, a class instance) are parsed on every call too.
 *
 * @example
 * const parse = optionsParser('timeout()', timeoutOptionsSchema)
 * export function timeout(options?: TimeoutOptions) {
 *   const { ms } = parse(options)
 * }
 */
export function optionsParser<S extends z.ZodType>(owner: string, schema: S): (input: unknown) => z.output<S> {
  let defaults: { readonly value: z.output<S> } | undefined
  let shared = true
  return (input) => {
    if (input !== undefined || !shared) return parseOptions(owner, schema, input)
    if (defaults !== undefined) return defaults.value
    const value = parseOptions(owner, schema, undefined)
    shared = isData(value)
    if (shared) defaults = { value: freeze(value) }
    return value
  }
}
