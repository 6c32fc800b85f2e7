import type { StoredResult } from './idempotency-store.js'

/** Deepest nesting a stored result may have: past it, replaying (JSON.stringify) could overflow the stack. */
export const MAX_RESULT_DEPTH = 1000

/**
 * What is wrong with a value a store read back as a {@link StoredResult}, or `undefined` when it is
 * one: a plain object whose only key is an optional `value` holding JSON (strings, finite numbers,
 * booleans, null, arrays, plain objects), at most {@link MAX_RESULT_DEPTH} deep. An own `__proto__`
 * key inside the value is data, as JSON.parse reads it and as the tool returned it: it is replayed,
 * never assigned, so no prototype changes. Walks iteratively, so a hostile value costs time, never the stack.
 *
 * @example
 * storedResultProblem({ value: 'ch_1' }) // undefined
 * storedResultProblem('charged')         // 'not an object: a string'
 */
export function storedResultProblem(result: unknown): string | undefined {
  if (!isPlainObject(result)) return `not an object: ${kindOf(result)}`
  for (const key of Object.keys(result)) if (key !== 'value') return `unexpected field "${key}"`
  // `{ value: undefined }` is how a store that keeps objects holds a tool that returned nothing.
  if ((result as { value?: unknown }).value === undefined) return undefined
  const pending: Array<[unknown, number]> = [[(result as { value: unknown }).value, 1]]
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const [value, depth] = next
    if (value === null || typeof value === 'string' || typeof value === 'boolean') continue
    if (typeof value === 'number') {
      if (!Number.isFinite(value)) return `value holds a non-finite number (${value})`
      continue
    }
    if (depth > MAX_RESULT_DEPTH) return `value is nested deeper than ${MAX_RESULT_DEPTH} levels`
    if (Array.isArray(value)) {
      for (const item of value) pending.push([item, depth + 1])
      continue
    }
    if (!isPlainObject(value)) return `value holds ${kindOf(value)}, which is not JSON`
    for (const key of Object.keys(value)) pending.push([(value as Record<string, unknown>)[key], depth + 1])
  }
  return undefined
}

/**
 * Parses a stored result's JSON text and checks it with {@link storedResultProblem}: the result, or
 * what is wrong with it. Never throws, whatever the text (truncated, huge, 100,000 levels deep).
 * For store authors: a record whose result does not parse is corrupt, never an empty success.
 *
 * @example
 * parseStoredResult('{"value":{"chargeId":"ch_1"}}') // { result: { value: { chargeId: 'ch_1' } } }
 * parseStoredResult('"charged"')                     // { problem: 'result is not an object: a string' }
 */
export function parseStoredResult(text: unknown): { readonly result: StoredResult } | { readonly problem: string } {
  if (typeof text !== 'string') return { problem: `result is ${kindOf(text)}, not JSON text` }
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch (err) {
    return { problem: `result is not JSON (${err instanceof RangeError ? 'too deep' : 'malformed or truncated'})` }
  }
  const problem = storedResultProblem(parsed)
  return problem === undefined ? { result: parsed as StoredResult } : { problem: `result is ${problem}` }
}

function isPlainObject(value: unknown): value is object {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false
  const proto = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null
}

function kindOf(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  if (typeof value === 'object') return 'an object of another kind'
  return typeof value === 'undefined' ? 'missing' : `a ${typeof value}`
}
