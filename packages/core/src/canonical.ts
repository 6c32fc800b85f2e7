import * as crypto from 'node:crypto'

const { createHash } = crypto
const oneShot = (crypto as { hash?: (algorithm: string, data: string, encoding: 'hex') => string }).hash

/** The objects on the path being written, to spell out cycles; one Set for every call, emptied when it returns. */
const onPath = new Set<object>()
let writing = false

function write(v: unknown, seen: Set<object>): string {
  switch (typeof v) {
    case 'string':
      return JSON.stringify(v)
    case 'number':
      return Number.isFinite(v) ? JSON.stringify(v === 0 ? 0 : v) : `"${String(v)}"`
    case 'boolean':
      return v ? 'true' : 'false'
    case 'bigint':
      return `"${v}n"`
    case 'undefined':
    case 'function':
    case 'symbol':
      return 'null'
  }
  if (v === null) return 'null'
  const obj = v as object
  if (seen.has(obj)) return '"[circular]"'
  seen.add(obj)
  let out: string
  if (Array.isArray(obj)) {
    // By index: a sparse array's holes are written as null, as JSON does.
    out = '['
    for (let i = 0; i < obj.length; i++) out += i === 0 ? write(obj[i], seen) : `,${write(obj[i], seen)}`
    out += ']'
  } else if (obj instanceof Date) {
    // An invalid date is null, as in JSON.stringify; toISOString() would throw.
    out = Number.isNaN(obj.getTime()) ? 'null' : JSON.stringify(obj.toISOString())
  } else {
    const record = obj as Record<string, unknown>
    const keys = Object.keys(record).sort()
    out = '{'
    let first = true
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i] as string
      const item = record[key]
      if (item === undefined || typeof item === 'function' || typeof item === 'symbol') continue
      out += `${first ? '' : ','}${JSON.stringify(key)}:${write(item, seen)}`
      first = false
    }
    out += '}'
  }
  seen.delete(obj)
  return out
}

/**
 * JSON with object keys sorted at every depth, so `{b:1,a:2}` and `{ "a": 2, "b": 1 }` read the same.
 * Numbers print in their shortest form (`1.0`, `1e0` and `1` agree; `-0` is `0`); `undefined`
 * members are dropped as JSON does. Values JSON cannot hold (bigint, functions, cycles) are spelled
 * out rather than thrown, so a fingerprint of any argument value is always defined.
 *
 * @example
 * canonicalJson({ b: [1, 2], a: 'x' }) // '{"a":"x","b":[1,2]}'
 */
export function canonicalJson(value: unknown): string {
  // A getter that fingerprints something while being fingerprinted gets a path of its own.
  if (writing) return write(value, new Set())
  writing = true
  try {
    return write(value, onPath)
  } finally {
    writing = false
    onPath.clear()
  }
}

/**
 * A stable, short hex digest (SHA-256, 32 hex characters) of the canonical JSON of `value`
 * (a string is hashed as its JSON form, so `hashOf('{"a":1}')` and `hashOf({ a: 1 })` differ).
 * A string is hashed as the JSON string it is, so `'1'` and `1` never share a digest.
 *
 * @example
 * hashOf({ a: 1, b: 2 }) === hashOf({ b: 2, a: 1 }) // true
 */
export function hashOf(value: unknown): string {
  const text = canonicalJson(value)
  // crypto.hash (Node 20.12+) is the one-shot digest: half the cost of a Hash object per call.
  return (oneShot === undefined ? createHash('sha256').update(text).digest('hex') : oneShot('sha256', text, 'hex')).slice(0, 32)
}
