import { createHash } from 'node:crypto'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { hashOfNamed } from './canonical.js'
import type { Json } from './index.js'
import { canonicalJson, hashOf, tupleHasher } from './kit.js'

/** The same JSON value with the keys of every object in another order, chosen by `order`. */
function reorder(value: Json, order: (keys: string[]) => string[]): Json {
  if (Array.isArray(value)) return value.map((item) => reorder(item, order))
  if (value === null || typeof value !== 'object') return value
  // fromEntries defines own properties, so a generated "__proto__" key stays a plain key.
  return Object.fromEntries(order(Object.keys(value)).map((key) => [key, reorder(value[key] as Json, order)]))
}

/** What JSON itself cannot tell apart: -0 and 0. */
function normalise(value: Json): Json {
  if (typeof value === 'number') return value === 0 ? 0 : value
  if (Array.isArray(value)) return value.map(normalise)
  if (value === null || typeof value !== 'object') return value
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, normalise(item)]))
}

const sha = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 32)

describe('canonicalJson: laws', () => {
  it('does not depend on the order of keys, at any depth', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.gen(), (value, g) => {
        const shuffled = reorder(value as Json, (keys) => g(fc.shuffledSubarray, keys, { minLength: keys.length }))
        expect(canonicalJson(shuffled)).toBe(canonicalJson(value))
      }),
    )
  })

  it('does not depend on whitespace or formatting of the JSON text it came from', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(canonicalJson(JSON.parse(JSON.stringify(value, null, 2)))).toBe(canonicalJson(value))
      }),
    )
  })

  it('is valid JSON that reads back as the same value', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(JSON.parse(canonicalJson(value))).toEqual(normalise(value as Json))
      }),
    )
  })

  it('spells a number the same however the JSON text wrote it (1, 1.0, 1e0, 10e-1)', () => {
    fc.assert(
      fc.property(fc.integer({ min: -1_000_000, max: 1_000_000 }), (n) => {
        const expected = canonicalJson({ n })
        for (const text of [`${n}`, `${n}.0`, `${n}.000`, `${n}e0`, `${n * 10}e-1`]) {
          expect(canonicalJson(JSON.parse(`{"n": ${text}}`))).toBe(expected)
        }
      }),
    )
    expect(canonicalJson(JSON.parse('[1.0, -0, 0.50, 1E3]'))).toBe('[1,0,0.5,1000]')
  })
})

describe('canonicalJson: cases', () => {
  it('sorts keys at every depth and keeps array order', () => {
    expect(canonicalJson({ b: [3, { d: 1, c: 2 }], a: 'x' })).toBe('{"a":"x","b":[3,{"c":2,"d":1}]}')
  })

  it('drops undefined members as JSON does, and writes undefined array items as null', () => {
    expect(canonicalJson({ a: undefined, b: 1, f: () => 1 })).toBe('{"b":1}')
    expect(canonicalJson([undefined, () => 1])).toBe('[null,null]')
  })

  it('writes the holes of a sparse array as null, so the output stays valid JSON', () => {
    // biome-ignore lint/suspicious/noSparseArray: the case is exactly a sparse array
    const sparse = [, 1, , 2]
    expect(canonicalJson(sparse)).toBe('[null,1,null,2]')
    expect(canonicalJson(sparse)).toBe(JSON.stringify(sparse))
  })

  it('spells out what JSON cannot hold instead of throwing', () => {
    const cyclic: Record<string, unknown> = { a: 1 }
    cyclic.self = cyclic
    expect(canonicalJson(cyclic)).toBe('{"a":1,"self":"[circular]"}')
    expect(canonicalJson({ n: 10n })).toBe('{"n":"10n"}')
    expect(canonicalJson([Number.NaN, Number.POSITIVE_INFINITY])).toBe('["NaN","Infinity"]')
    expect(canonicalJson(new Date(0))).toBe('"1970-01-01T00:00:00.000Z"')
    expect(() => canonicalJson({ when: new Date(Number.NaN) })).not.toThrow()
    expect(canonicalJson({ when: new Date(Number.NaN) })).toBe('{"when":null}')
  })

  it('writes a value shared twice (not a cycle) in full both times', () => {
    const shared = { id: 1 }
    expect(canonicalJson({ a: shared, b: shared })).toBe('{"a":{"id":1},"b":{"id":1}}')
  })
})

describe('hashOf', () => {
  it('is the first 32 hex characters of the SHA-256 of the canonical JSON, and stays so', () => {
    expect(hashOf({ b: 2, a: 1 })).toBe(sha('{"a":1,"b":2}'))
    expect(hashOf({ b: 2, a: 1 })).toBe('43258cff783fe7036d8a43033f830adf')
    expect(hashOf(['read_file', { path: 'src/main.rs' }])).toMatch(/^[0-9a-f]{32}$/)
  })

  it('is equal for equal values whatever their key order, and differs for different values', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.gen(), (value, g) => {
        const shuffled = reorder(value as Json, (keys) => g(fc.shuffledSubarray, keys, { minLength: keys.length }))
        expect(hashOf(shuffled)).toBe(hashOf(value))
      }),
    )
    expect(hashOf({ a: 1 })).not.toBe(hashOf({ a: 2 }))
  })

  it('hashes a string as the JSON string it is, so it never collides with the value it spells', () => {
    expect(hashOf('x')).toBe(sha('"x"'))
    expect(hashOf('1')).not.toBe(hashOf(1))
    expect(hashOf('null')).not.toBe(hashOf(null))
    expect(hashOf('{"a":1}')).not.toBe(hashOf({ a: 1 }))
  })
})

/** The implementation before it stopped allocating a closure, a Set and arrays per call: the oracle. */
function oracleCanonicalJson(value: unknown): string {
  const seen = new Set<object>()
  const write = (v: unknown): string => {
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
      const items: string[] = []
      for (let i = 0; i < obj.length; i++) items.push(write(obj[i]))
      out = `[${items.join(',')}]`
    } else if (obj instanceof Date) {
      out = Number.isNaN(obj.getTime()) ? 'null' : JSON.stringify(obj.toISOString())
    } else {
      const record = obj as Record<string, unknown>
      const parts: string[] = []
      for (const key of Object.keys(record).sort()) {
        const item = record[key]
        if (item === undefined || typeof item === 'function' || typeof item === 'symbol') continue
        parts.push(`${JSON.stringify(key)}:${write(item)}`)
      }
      out = `{${parts.join(',')}}`
    }
    seen.delete(obj)
    return out
  }
  return write(value)
}

/** Any value, JSON or not: what fast-check makes of every kind, JSON, and arrays of doubles, holes and functions. */
const anyValue = fc.oneof(
  fc.anything({
    withBigInt: true,
    withDate: true,
    withSparseArray: true,
    withNullPrototype: true,
    withObjectString: true,
    withBoxedValues: true,
    withMap: true,
    withSet: true,
    withTypedArray: true,
  }),
  fc.jsonValue(),
  fc.array(fc.oneof(fc.double(), fc.constant(undefined), fc.func(fc.nat()))),
)

describe('canonicalJson against the allocating implementation it replaced', () => {
  it('writes the same bytes for any value, JSON or not', () => {
    fc.assert(
      fc.property(anyValue, (value) => {
        expect(canonicalJson(value)).toBe(oracleCanonicalJson(value))
      }),
      { numRuns: 2000 },
    )
  }, 60_000)

  it('writes the same bytes for strings and keys of any code units: quotes, controls, lone and paired surrogates', () => {
    const text = fc.string({ unit: 'binary', maxLength: 80 })
    fc.assert(
      fc.property(fc.dictionary(text, fc.oneof(text, fc.array(text))), text, (record, alone) => {
        expect(canonicalJson(record)).toBe(oracleCanonicalJson(record))
        expect(canonicalJson(alone)).toBe(oracleCanonicalJson(alone))
      }),
      { numRuns: 500 },
    )
    for (const edge of ['"', '\\', '\u0000', '\u001f', '\u007f', '\u2028', '\ud800', '\udfff', '\ud83d\ude00', 'x'.repeat(65)]) {
      expect(canonicalJson({ [edge]: edge })).toBe(oracleCanonicalJson({ [edge]: edge }))
    }
  }, 60_000)

  it('writes the same bytes for shared and cyclic structures, and stays right on the next call', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.nat(5), (value, where) => {
        const shared = { value }
        const cyclic: Record<string, unknown> = { a: shared, b: [shared, shared] }
        if (where % 2 === 0) cyclic.self = cyclic
        else (cyclic.b as unknown[]).push(cyclic)
        expect(canonicalJson(cyclic)).toBe(oracleCanonicalJson(cyclic))
        expect(canonicalJson(shared)).toBe(oracleCanonicalJson(shared))
      }),
    )
  })

  it('leaves no state behind when a getter throws, and lets a getter fingerprint while being fingerprinted', () => {
    const hostile = {
      get boom() {
        throw new Error('getter')
      },
    }
    const inner = { x: 1 }
    expect(() => canonicalJson({ inner, hostile })).toThrow('getter')
    // Were `inner` still marked as on the path, it would now read as circular.
    expect(canonicalJson({ inner })).toBe('{"inner":{"x":1}}')
    const reentrant = {
      a: inner,
      get b() {
        return canonicalJson({ inner })
      },
    }
    expect(canonicalJson(reentrant)).toBe(oracleCanonicalJson(reentrant))
  })
})

describe('hashOf against the digest of the oracle text', () => {
  const oracleHash = (value: unknown) => sha(oracleCanonicalJson(value))

  it('digests the same bytes for any value, JSON or not', () => {
    fc.assert(
      fc.property(anyValue, (value) => {
        expect(hashOf(value)).toBe(oracleHash(value))
      }),
      { numRuns: 2000 },
    )
  }, 60_000)

  it('digests the UTF-8 of strings and keys of any code units: non-ASCII, quotes, controls, lone and paired surrogates', () => {
    const text = fc.string({ unit: 'binary', maxLength: 80 })
    fc.assert(
      fc.property(fc.dictionary(text, fc.oneof(text, fc.array(text))), text, (record, alone) => {
        expect(hashOf(record)).toBe(oracleHash(record))
        expect(hashOf(alone)).toBe(oracleHash(alone))
      }),
      { numRuns: 500 },
    )
    const edges = ['"', '\\', '\u0000', '\u001f', '\u007f', '\u0080', '\u07ff', '\u0800', '\u2028', '\uffff', '\ud800', '\udfff']
    for (const edge of [...edges, '\ud83d\ude00', 'é✓😀', 'x'.repeat(65), 'é'.repeat(2000)]) {
      expect(hashOf({ [edge]: edge })).toBe(oracleHash({ [edge]: edge }))
    }
  }, 60_000)

  it('digests odd objects the way the text writes them: an array with the Date prototype, a Date subclass', () => {
    const arrayDate = Object.setPrototypeOf(['é', 1], Date.prototype) as unknown
    class Day extends Date {}
    for (const value of [arrayDate, [new Day(0), new Day(Number.NaN)], { at: new Day(86_400_000) }]) {
      expect(hashOf(value)).toBe(oracleHash(value))
    }
    expect(() => hashOf(Object.create(Date.prototype))).toThrow(TypeError)
  })

  it('digests the bytes of this call after its buffer grew, not those a value of the same length left before', () => {
    expect(hashOf({ a: 1 })).toBe(sha('{"a":1}'))
    const grows = { text: 'x'.repeat(3000) }
    expect(hashOf(grows)).toBe(oracleHash(grows))
    expect(hashOf({ b: 2 })).toBe(sha('{"b":2}'))
    expect(hashOf({ a: 1 })).toBe(sha('{"a":1}'))
  })

  it('digests values larger than its buffer, and the next small value the same as before', () => {
    const big = { rows: Array.from({ length: 3000 }, (_, i) => ({ id: i, name: `row ${i} ✓`, tags: ['a', 'b'] })) }
    expect(hashOf(big)).toBe(oracleHash(big))
    expect(hashOf({ a: 1 })).toBe(sha('{"a":1}'))
  })

  it('leaves no state behind when a getter throws, and lets a getter hash while being hashed', () => {
    const inner = { x: 1 }
    const hostile = {
      get boom() {
        throw new Error('getter')
      },
    }
    expect(() => hashOf({ inner, hostile })).toThrow('getter')
    // Were `inner` still marked as on the path, or the bytes of the failed call still there, this would differ.
    expect(hashOf({ inner })).toBe(sha('{"inner":{"x":1}}'))
    const reentrant = {
      a: inner,
      get b() {
        return hashOf({ inner })
      },
    }
    expect(hashOf(reentrant)).toBe(oracleHash({ a: inner, b: hashOf({ inner }) }))
  })

  it('digests an own "__proto__" key as a key, and two objects differing only there differently', () => {
    const hostile = JSON.parse('{"__proto__":{"admin":true},"amount":5}') as unknown
    expect(hashOf(hostile)).toBe(oracleHash(hostile))
    expect(hashOf(hostile)).not.toBe(hashOf({ amount: 5 }))
  })

  it('refuses a value nested past the call stack with a RangeError, and the next digest is unharmed', () => {
    let deep: unknown = 'bottom'
    for (let i = 0; i < 200_000; i++) deep = [deep]
    expect(() => hashOf(deep)).toThrow(RangeError)
    expect(hashOf({ a: 1 })).toBe(sha('{"a":1}'))
  })
})

describe('hashOfNamed and tupleHasher: hashOf with the head of the array kept', () => {
  const text = fc.string({ unit: 'binary', maxLength: 40 })
  const oracleHash = (value: unknown) => sha(oracleCanonicalJson(value))

  it('hashOfNamed(name, value) is hashOf([name, value]) for any name and value, name after name', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.oneof(text, fc.constantFrom('read_file', '__proto__', '')), anyValue), { maxLength: 8 }),
        (calls) => {
          for (const [name, value] of calls) expect(hashOfNamed(name, value)).toBe(oracleHash([name, value]))
        },
      ),
      { numRuns: 500 },
    )
  }, 60_000)

  it('tupleHasher gives hashOf([a, b, c, last]) for any strings, whichever of them repeat', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.tuple(
            fc.constantFrom('default', 'té"nant'),
            fc.oneof(text, fc.constant('run-1')),
            fc.oneof(text, fc.constantFrom('charge', 'refund')),
            text,
          ),
          { maxLength: 12 },
        ),
        (keys) => {
          const hash = tupleHasher()
          for (const [a, b, c, last] of keys) expect(hash(a, b, c, last)).toBe(oracleHash([a, b, c, last]))
        },
      ),
      { numRuns: 500 },
    )
  }, 60_000)

  it("keeps giving hashOf's digest past its caches: huge heads, many tools, a non-string from untyped code", () => {
    const hash = tupleHasher()
    const huge = 'r'.repeat(100_000)
    expect(hash('default', huge, 'charge', 'a'.repeat(32))).toBe(hashOf(['default', huge, 'charge', 'a'.repeat(32)]))
    for (let i = 0; i < 200; i++) expect(hash('default', 'run-1', `tool_${i}`, 'x')).toBe(hashOf(['default', 'run-1', `tool_${i}`, 'x']))
    expect(hash('default', 'run-1', 'charge', 5 as unknown as string)).toBe(hashOf(['default', 'run-1', 'charge', 5]))
    expect(hashOfNamed(huge, { a: 1 })).toBe(hashOf([huge, { a: 1 }]))
    for (let i = 0; i < 200; i++) expect(hashOfNamed(`made_up_${i}`, i)).toBe(hashOf([`made_up_${i}`, i]))
    expect(hashOfNamed(7 as unknown as string, 'x')).toBe(hashOf([7, 'x']))
    // The shared buffer is left right for the next digest.
    expect(hashOf({ a: 1 })).toBe(sha('{"a":1}'))
  })

  it('hashOfNamed leaves no state behind when a getter throws, and lets a getter hash while being hashed', () => {
    const throwing = {
      get a() {
        throw new Error('boom')
      },
    }
    expect(() => hashOfNamed('t', throwing)).toThrow('boom')
    expect(hashOfNamed('t', { a: 1 })).toBe(sha('["t",{"a":1}]'))
    const reentrant = {
      get b() {
        return hashOfNamed('inner', [1])
      },
    }
    expect(hashOfNamed('t', reentrant)).toBe(oracleHash(['t', { b: hashOf(['inner', [1]]) }]))
  })
})
