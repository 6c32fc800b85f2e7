import * as crypto from 'node:crypto'

const { createHash } = crypto
const oneShot = (crypto as { hash?: (algorithm: string, data: string | Uint8Array, encoding: 'hex') => string }).hash

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

// hashOf's writer: the same canonical JSON, as UTF-8 bytes in one buffer every call reuses, so a
// digest costs no strings at all (the text above would be a tree of pieces that Node flattens and
// encodes again before hashing). Pinned byte for byte to canonicalJson by property tests.

/** Past this size the buffer is dropped after the call, so one huge value does not stay in memory. */
const KEPT_BYTES = 64 * 1024
let bytes = new Uint8Array(1024)
let size = 0
const bytesPath: object[] = []
let hashing = false

/** Views of the buffer by length, each made once, so the digest of a small value allocates nothing. */
const VIEWED_BYTES = 256
let views: (Uint8Array | undefined)[] = []

/** The bytes written so far. */
function written(): Uint8Array {
  if (size > VIEWED_BYTES) return bytes.subarray(0, size)
  let view = views[size]
  if (view === undefined) {
    view = bytes.subarray(0, size)
    views[size] = view
  }
  return view
}

function reserve(extra: number): void {
  if (size + extra <= bytes.length) return
  const grown = new Uint8Array(Math.max(bytes.length * 2, size + extra))
  grown.set(bytes.subarray(0, size))
  bytes = grown
  views = []
}

// The loops below work on locals (the buffer and the write position) and store the position once:
// module variables would be loaded and stored again for every byte.

/** `text` known to be ASCII. */
function putAscii(text: string): void {
  reserve(text.length)
  const out = bytes
  let at = size
  for (let i = 0; i < text.length; i++) out[at++] = text.charCodeAt(i)
  size = at
}

/** UTF-8, as Node encodes a string for hashing: a lone surrogate (which canonical text never holds) as U+FFFD. */
function putUtf8(text: string): void {
  reserve(text.length * 3)
  const out = bytes
  let at = size
  for (let i = 0; i < text.length; i++) {
    let c = text.charCodeAt(i)
    if (c < 0x80) {
      out[at++] = c
      continue
    }
    if (c < 0x800) {
      out[at++] = 0xc0 | (c >> 6)
      out[at++] = 0x80 | (c & 0x3f)
      continue
    }
    if (c >= 0xd800 && c <= 0xdfff) {
      const low = c <= 0xdbff && i + 1 < text.length ? text.charCodeAt(i + 1) : 0
      if (low < 0xdc00 || low > 0xdfff) {
        out[at++] = 0xef
        out[at++] = 0xbf
        out[at++] = 0xbd
        continue
      }
      i++
      c = 0x10000 + ((c - 0xd800) << 10) + (low - 0xdc00)
      out[at++] = 0xf0 | (c >> 18)
      out[at++] = 0x80 | ((c >> 12) & 0x3f)
      out[at++] = 0x80 | ((c >> 6) & 0x3f)
      out[at++] = 0x80 | (c & 0x3f)
      continue
    }
    out[at++] = 0xe0 | (c >> 12)
    out[at++] = 0x80 | ((c >> 6) & 0x3f)
    out[at++] = 0x80 | (c & 0x3f)
  }
  size = at
}

/** A JSON string: printable ASCII with nothing to escape as it is, anything else as JSON.stringify writes it. */
function putQuoted(text: string): void {
  reserve(text.length + 2)
  const out = bytes
  let at = size
  out[at++] = 0x22
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c < 0x20 || c === 0x22 || c === 0x5c || c >= 0x80) {
      putUtf8(JSON.stringify(text))
      return
    }
    out[at++] = c
  }
  out[at++] = 0x22
  size = at
}

function putByte(byte: number): void {
  reserve(1)
  bytes[size++] = byte
}

/** {@link write}, as bytes. */
function put(v: unknown, path: object[]): void {
  if (typeof v === 'string') {
    putQuoted(v)
    return
  }
  // Numbers, booleans, bigints, null and what JSON drops are written as ASCII text: write's, copied.
  if (typeof v !== 'object' || v === null) {
    putAscii(write(v, path))
    return
  }
  const obj = v as object
  if (path.includes(obj)) {
    putAscii('"[circular]"')
    return
  }
  path.push(obj)
  if (Array.isArray(obj)) {
    putByte(0x5b)
    for (let i = 0; i < obj.length; i++) {
      if (i > 0) putByte(0x2c)
      put(obj[i], path)
    }
    putByte(0x5d)
  } else if (obj instanceof Date) {
    // An ISO date is ASCII.
    putAscii(Number.isNaN(obj.getTime()) ? 'null' : JSON.stringify(obj.toISOString()))
  } else {
    const record = obj as Record<string, unknown>
    const keys = Object.keys(record)
    if (keys.length > 1) keys.sort()
    putByte(0x7b)
    let first = true
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i] as string
      const item = record[key]
      if (item === undefined || typeof item === 'function' || typeof item === 'symbol') continue
      if (!first) putByte(0x2c)
      putQuoted(key)
      putByte(0x3a)
      put(item, path)
      first = false
    }
    putByte(0x7d)
  }
  path.pop()
}

function digest(data: string | Uint8Array): string {
  // crypto.hash (Node 20.12+) is the one-shot digest: half the cost of a Hash object per call.
  return (oneShot === undefined ? createHash('sha256').update(data).digest('hex') : oneShot('sha256', data, 'hex')).slice(0, 32)
}

/** Past {@link KEPT_BYTES}, the buffer one huge value grew is let go. */
function dropLargeBuffer(): void {
  if (bytes.length > KEPT_BYTES) {
    bytes = new Uint8Array(1024)
    views = []
  }
}

/** A digest is over: the path emptied (a getter may have thrown mid-way) and a huge buffer let go. */
function doneHashing(): void {
  hashing = false
  if (bytesPath.length !== 0) bytesPath.length = 0
  dropLargeBuffer()
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
  // A getter that hashes something while being hashed goes through the text.
  if (hashing) return digest(canonicalJson(value))
  hashing = true
  size = 0
  try {
    put(value, bytesPath)
    return digest(written())
  } finally {
    doneHashing()
  }
}

/** The longest head whose bytes are kept; a longer one (a huge run id or tool name) is hashed as any value. */
const KEPT_HEAD_BYTES = 1024
/** Heads kept per cache: more than this (many tools, or names a model made up) start the cache again. */
const KEPT_HEADS = 64

/** The canonical bytes of an array's first items (`["a","b",`, comma included) as {@link put} writes them. */
function headBytes(items: readonly string[]): Uint8Array {
  size = 0
  putByte(0x5b)
  for (let i = 0; i < items.length; i++) {
    putQuoted(items[i] as string)
    putByte(0x2c)
  }
  const head = bytes.slice(0, size)
  dropLargeBuffer()
  return head
}

/** Starts the buffer with `head`'s bytes. */
function putHead(head: Uint8Array): void {
  size = 0
  reserve(head.length)
  bytes.set(head)
  size = head.length
}

/** Kept heads by key, forgotten all at once when full. */
function headCache(): { get(key: string, a: string, b?: string, c?: string): Uint8Array | undefined; clear(): void } {
  const heads = new Map<string, Uint8Array>()
  return {
    clear: () => heads.clear(),
    get(key, a, b, c) {
      let head = heads.get(key)
      if (head === undefined) {
        head = headBytes(b === undefined ? [a] : c === undefined ? [a, b] : [a, b, c])
        if (head.length > KEPT_HEAD_BYTES) return undefined
        if (heads.size >= KEPT_HEADS) heads.clear()
        heads.set(key, head)
      }
      return head
    },
  }
}

const namedHeads = headCache()

/**
 * `hashOf([name, value])`, digest for digest, with the bytes of `["name",` written once per name:
 * a call's fingerprint, whose tool name repeats call after call.
 *
 * @example
 * hashOfNamed('read_file', { path: 'a' }) === hashOf(['read_file', { path: 'a' }]) // true
 */
export function hashOfNamed(name: string, value: unknown): string {
  const head = hashing || typeof name !== 'string' ? undefined : namedHeads.get(name, name)
  if (head === undefined) return hashOf([name, value])
  hashing = true
  try {
    putHead(head)
    put(value, bytesPath)
    putByte(0x5d)
    return digest(written())
  } finally {
    doneHashing()
  }
}

/**
 * `hashOf([a, b, c, last])` for four strings whose first three repeat call after call (an
 * idempotency key's scope, run id and tool name): once `a` and `b` repeat, the bytes of `["a","b","c",`
 * are written once per `c` while they stay the same, and each call writes only `last`. The digest is byte for
 * byte {@link hashOf}'s, so no key it derives ever changes.
 *
 * @example
 * const hash = tupleHasher()
 * hash('default', run.id, 'charge_card', argsHash) === hashOf(['default', run.id, 'charge_card', argsHash]) // true
 */
export function tupleHasher(): (a: string, b: string, c: string, last: string) => string {
  let keptA: string | undefined
  let keptB: string | undefined
  const heads = headCache()
  return (a, b, c, last) => {
    if (hashing || typeof a !== 'string' || typeof b !== 'string' || typeof c !== 'string' || typeof last !== 'string')
      return hashOf([a, b, c, last])
    // Heads are kept only once a scope and run repeat: calls of many runs interleaved cost what hashOf does.
    if (a !== keptA || b !== keptB) {
      heads.clear()
      keptA = a
      keptB = b
      return hashOf([a, b, c, last])
    }
    const head = heads.get(c, a, b, c)
    if (head === undefined) return hashOf([a, b, c, last])
    putHead(head)
    putQuoted(last)
    putByte(0x5d)
    const digested = digest(written())
    dropLargeBuffer()
    return digested
  }
}
