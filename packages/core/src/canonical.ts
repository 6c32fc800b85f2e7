import { hash } from 'node:crypto'

/** `value` as canonical JSON; `path` holds the objects being written around it, to spell out cycles. */
function write(value: unknown, path: object[]): string {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value)
    case 'number':
      // A finite number's JSON is its shortest string form; -0 is written as 0.
      return Number.isFinite(value) ? (value === 0 ? '0' : `${value}`) : `"${String(value)}"`
    case 'boolean':
      return value ? 'true' : 'false'
    case 'bigint':
      return `"${value}n"`
    case 'undefined':
    case 'function':
    case 'symbol':
      return 'null'
  }
  if (value === null) return 'null'
  const obj = value as object
  if (path.includes(obj)) return '"[circular]"'
  if (obj instanceof Date && !Array.isArray(obj)) {
    // An invalid date is null, as in JSON.stringify; toISOString() would throw.
    return Number.isNaN(obj.getTime()) ? 'null' : JSON.stringify(obj.toISOString())
  }
  path.push(obj)
  let out: string
  if (Array.isArray(obj)) {
    // By index: a sparse array's holes are written as null, as JSON does.
    out = '['
    for (let i = 0; i < obj.length; i++) out += `${i === 0 ? '' : ','}${write(obj[i], path)}`
    out += ']'
  } else {
    const record = obj as Record<string, unknown>
    out = '{'
    for (const key of Object.keys(record).sort()) {
      const item = record[key]
      if (item === undefined || typeof item === 'function' || typeof item === 'symbol') continue
      out += `${out === '{' ? '' : ','}${JSON.stringify(key)}:${write(item, path)}`
    }
    out += '}'
  }
  path.pop()
  return out
}

/**
 * JSON with object keys sorted at every depth, so `{b:1,a:2}` and `{ "a": 2, "b": 1 }` read the same.
 * Numbers print in their shortest form (`1.0`, `1e0` and `1` agree; `-0` is `0`); `undefined`
 * members are dropped as JSON does. Values JSON cannot hold (bigint, functions, cycles) are spelled
 * out rather than thrown, so a fingerprint of any argument value is always defined. `toJSON` is not
 * called: a fingerprint is of the value's own data.
 *
 * @example
 * canonicalJson({ b: [1, 2], a: 'x' }) // '{"a":"x","b":[1,2]}'
 */
export function canonicalJson(value: unknown): string {
  return write(value, [])
}

/**
 * A stable, short hex digest (SHA-256, 32 hex characters) of the canonical JSON of `value`.
 * A string is hashed as the JSON string it is, so `hashOf('1')` and `hashOf(1)`, or
 * `hashOf('{"a":1}')` and `hashOf({ a: 1 })`, never share a digest. Stores hold these digests
 * (fingerprints, idempotency keys, approval bindings): the output never changes.
 *
 * @example
 * hashOf({ a: 1, b: 2 }) === hashOf({ b: 2, a: 1 }) // true
 */
export function hashOf(value: unknown): string {
  return hash('sha256', canonicalJson(value), 'hex').slice(0, 32)
}
