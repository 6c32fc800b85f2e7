import * as crypto from 'node:crypto'

const { createHash } = crypto
const oneShot = (crypto as { hash?: (algorithm: string, data: string, encoding: 'hex') => string }).hash

/** The objects on the path being written, to spell out cycles; one array for every call, emptied when it returns. */
const onPath: object[] = []
let writing = false

/**
 * A string with nothing JSON escapes (quote, backslash, control characters, surrogates, which
 * JSON.stringify escapes when lone) is its own JSON body; anything else goes through JSON.stringify.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: these are the characters JSON escapes
const PLAIN = /^[^"\\\u0000-\u001f\ud800-\udfff]*$/
const quote = (text: string): string => (text.length <= 64 && PLAIN.test(text) ? `"${text}"` : JSON.stringify(text))

// Strings built by concatenation and a path array rather than a Set: about half the cost per value
// of the first version, which fingerprints and idempotency keys pay on every call.
function write(v: unknown, path: object[]): string {
  switch (typeof v) {
    case 'string':
      return quote(v)
    case 'number':
      // A finite number's JSON is its shortest string form; -0 is written as 0.
      return Number.isFinite(v) ? (v === 0 ? '0' : `${v}`) : `"${String(v)}"`
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
  if (path.includes(obj)) return '"[circular]"'
  path.push(obj)
  let out: string
  if (Array.isArray(obj)) {
    // By index: a sparse array's holes are written as null, as JSON does.
    out = '['
    for (let i = 0; i < obj.length; i++) out += i === 0 ? write(obj[i], path) : `,${write(obj[i], path)}`
    out += ']'
  } else if (obj instanceof Date) {
    // An invalid date is null, as in JSON.stringify; toISOString() would throw.
    out = Number.isNaN(obj.getTime()) ? 'null' : JSON.stringify(obj.toISOString())
  } else {
    const record = obj as Record<string, unknown>
    const keys = Object.keys(record)
    if (keys.length > 1) keys.sort()
    out = '{'
    let first = true
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i] as string
      const item = record[key]
      if (item === undefined || typeof item === 'function' || typeof item === 'symbol') continue
      out += first ? `${quote(key)}:${write(item, path)}` : `,${quote(key)}:${write(item, path)}`
      first = false
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
 * out rather than thrown, so a fingerprint of any argument value is always defined.
 *
 * @example
 * canonicalJson({ b: [1, 2], a: 'x' }) // '{"a":"x","b":[1,2]}'
 */
export function canonicalJson(value: unknown): string {
  // A primitive is written without touching the path (a tool's result often is one).
  if (typeof value !== 'object' || value === null) return write(value, onPath)
  // A getter that fingerprints something while being fingerprinted gets a path of its own.
  if (writing) return write(value, [])
  writing = true
  try {
    return write(value, onPath)
  } finally {
    writing = false
    // Balanced on every return; left over only when a getter threw mid-way.
    if (onPath.length !== 0) onPath.length = 0
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
