import { createHash } from 'node:crypto'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { Json } from './index.js'
import { canonicalJson, hashOf } from './kit.js'

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

/** The first implementation, written with a Set of the objects on the path: the oracle. */
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

describe('canonicalJson against the oracle', () => {
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

  it('digests each value on its own, whatever size the value before it had', () => {
    expect(hashOf({ a: 1 })).toBe(sha('{"a":1}'))
    const grows = { text: 'x'.repeat(3000) }
    expect(hashOf(grows)).toBe(oracleHash(grows))
    expect(hashOf({ b: 2 })).toBe(sha('{"b":2}'))
    expect(hashOf({ a: 1 })).toBe(sha('{"a":1}'))
  })

  it('digests large values, and the next small value the same as before', () => {
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
    // Were `inner` still marked as on the path, this would differ.
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

describe("canonicalJson and hashOf keep every output users' stores already hold", () => {
  const cyclic: Record<string, unknown> = { a: 1, list: [] }
  ;(cyclic.list as unknown[]).push(cyclic, { back: cyclic })
  cyclic.self = cyclic
  const shared = { id: 1, tags: ['a'] }
  class Point {
    x = 1
    get y() {
      return 2
    }
  }
  const nullProto = Object.assign(Object.create(null) as Record<string, unknown>, { b: 2, a: 1 })
  // biome-ignore lint/suspicious/noSparseArray: the case is exactly a sparse array
  const sparse = [, 1, , 2]

  /** Values whose fingerprints and keys users' stores already hold: every kind the writer treats on its own. */
  const corpus: [string, unknown][] = [
    ['empty object', {}],
    ['empty array', []],
    ['null', null],
    ['true', true],
    ['false', false],
    ['zero', 0],
    ['negative zero', -0],
    ['negative zero nested', { n: -0, list: [-0, 0] }],
    ['integers', [1, -1, 42, Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER]],
    ['fractions', [1.5, 0.1 + 0.2, -2.5e-3, 1 / 3]],
    ['big numbers', [1e21, 1.7976931348623157e308, 123456789012345680000, 2 ** 64]],
    ['small numbers', [1e-7, 5e-324, 2.2250738585072014e-308, 0.000001]],
    ['not finite', [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]],
    ['bigint', { n: 10n, m: -5n, z: 0n }],
    ['undefined alone', undefined],
    ['function alone', () => 1],
    ['symbol alone', Symbol('s')],
    ['dropped members', { a: undefined, b: () => 1, c: Symbol('c'), d: null, e: 0 }],
    ['undefined in arrays', [undefined, () => 1, Symbol('s'), null]],
    ['empty string', ''],
    ['ascii string', 'read_file'],
    ['string that looks like JSON', '{"a":1}'],
    ['non-ASCII', 'é✓ ñ 中文 😀'],
    ['lone high surrogate', '\ud800'],
    ['lone low surrogate', '\udfff'],
    ['surrogates out of order', '\udc00\ud800 a\ud83dz'],
    ['surrogate pair', '\ud83d\ude00'],
    ['quotes and backslashes', '"quoted" \\ back\\slash'],
    ['control characters', '\u0000\u0001\u001f\u007f\t\n\r\b\f'],
    ['line separators', '\u2028\u2029'],
    ['long ASCII string', 'x'.repeat(65)],
    ['long non-ASCII string', 'é'.repeat(2000)],
    ['unicode keys', { é: 1, z: 2, A: 3, '😀': 4, '\uffff': 5, '10': 6, '9': 7, '': 8, '\ud800': 9 }],
    ['own __proto__ key', JSON.parse('{"__proto__":{"admin":true},"amount":5}')],
    ['__proto__ key nested', JSON.parse('{"a":[{"__proto__":null,"constructor":1}]}')],
    ['null prototype', nullProto],
    ['class instance', new Point()],
    ['toJSON is not called', { toJSON: () => 'x', a: 1 }],
    ['nested arrays', [[[]], [[1, [2, [3, [4]]]]], [[], {}], [[null]]]],
    ['sparse array', sparse],
    ['dates', [new Date(0), new Date(Number.NaN), { at: new Date(1_700_000_000_000) }]],
    [
      'collections and boxes',
      [
        new Map([[1, 2]]),
        new Set([1]),
        new Uint8Array([3, 1, 2]),
        new String('boxed'),
        new Number(3),
        new Boolean(false),
        /re/g,
        new Error('x'),
      ],
    ],
    ['cycles', cyclic],
    ['a value shared twice', { a: shared, b: [shared, shared] }],
    ['sorted at every depth', { b: [3, { d: 1, c: 2 }], a: { z: { y: 1, x: 2 }, w: 'x' } }],
    ['a call fingerprint', ['read_file', { path: 'src/main.rs', encoding: 'utf8' }]],
    ['an approval digest', ['transfer', { to: 'bob', amountCents: 50_000 }]],
    ['an idempotency key', ['default', 'run-1', 'charge_card', '43258cff783fe7036d8a43033f830adf']],
    ['an idempotency key, non-ASCII', ['té"nant', 'run-é', 'charge', '\ud800']],
    ['a large result', { rows: Array.from({ length: 300 }, (_, i) => ({ id: i, name: `row ${i} ✓`, tags: ['a', 'b'], ok: i % 2 === 0 })) }],
  ]

  /**
   * Written by the implementation before this one (a UTF-8 encoder into a reused buffer for hashOf, a
   * second writer for canonicalJson), for the corpus above. A fingerprint, an idempotency key or an
   * approval digest a store holds is one of these: none may change. `undefined`: text too long to list.
   */
  const stored: [string, string | undefined, string][] = [
    ['empty object', '{}', '44136fa355b3678a1146ad16f7e8649e'],
    ['empty array', '[]', '4f53cda18c2baa0c0354bb5f9a3ecbe5'],
    ['null', 'null', '74234e98afe7498fb5daf1f36ac2d78a'],
    ['true', 'true', 'b5bea41b6c623f7c09f1bf24dcae58eb'],
    ['false', 'false', 'fcbcf165908dd18a9e49f7ff27810176'],
    ['zero', '0', '5feceb66ffc86f38d952786c6d696c79'],
    ['negative zero', '0', '5feceb66ffc86f38d952786c6d696c79'],
    ['negative zero nested', '{"list":[0,0],"n":0}', '21beb591e0d92ff0d6ab6cfff50be154'],
    ['integers', '[1,-1,42,9007199254740991,-9007199254740991]', '449224728aa64b5a249b1d4277f41cd3'],
    ['fractions', '[1.5,0.30000000000000004,-0.0025,0.3333333333333333]', '793f857c06eb49086b6432c871872fba'],
    ['big numbers', '[1e+21,1.7976931348623157e+308,123456789012345680000,18446744073709552000]', 'a242ce0bba4360f253dc85ddfad1a52a'],
    ['small numbers', '[1e-7,5e-324,2.2250738585072014e-308,0.000001]', '0d51aac32e480b7eaeb0c45e2d7b093c'],
    ['not finite', '["NaN","Infinity","-Infinity"]', 'c0423d1ee669aa4345cb487f824a124e'],
    ['bigint', '{"m":"-5n","n":"10n","z":"0n"}', 'fe43258e6d752ccbace45961b39f66c2'],
    ['undefined alone', 'null', '74234e98afe7498fb5daf1f36ac2d78a'],
    ['function alone', 'null', '74234e98afe7498fb5daf1f36ac2d78a'],
    ['symbol alone', 'null', '74234e98afe7498fb5daf1f36ac2d78a'],
    ['dropped members', '{"d":null,"e":0}', '09ccbe0932f7bdaa7df06572ee8fb88e'],
    ['undefined in arrays', '[null,null,null,null]', '6cd8cec706fa11110d83fb46f97df1f9'],
    ['empty string', '""', '12ae32cb1ec02d01eda3581b127c1fee'],
    ['ascii string', '"read_file"', '6913ac2ef1d90958887910f5c5df25a3'],
    ['string that looks like JSON', '"{\\"a\\":1}"', '3dc4eef510cec9eda1ca361042e8152b'],
    ['non-ASCII', '"\u00e9\u2713 \u00f1 \u4e2d\u6587 \ud83d\ude00"', 'b7189e98e227e50874e26819aa0edf00'],
    ['lone high surrogate', '"\\ud800"', '8c0c59dd0d275aadcd462a5fe12eb352'],
    ['lone low surrogate', '"\\udfff"', 'aa68369aff102de57c3da5ad0dd5c241'],
    ['surrogates out of order', '"\\udc00\\ud800 a\\ud83dz"', '8bfd2b8f915fa75d212aeddf56805fa8'],
    ['surrogate pair', '"\ud83d\ude00"', '7a0c50b92434b015545fe93ab723db2d'],
    ['quotes and backslashes', '"\\"quoted\\" \\\\ back\\\\slash"', '1a0feb0ff77aa03bb02894abcaa23b3d'],
    ['control characters', '"\\u0000\\u0001\\u001f\u007f\\t\\n\\r\\b\\f"', 'bd1ee9948a2d78ec0b543aac1a93dfa6'],
    ['line separators', '"\u2028\u2029"', 'e3a0e2262ac7790f4df36b522a8fbdd4'],
    ['long ASCII string', '"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"', 'cfa70e8e4988336248c29a351788205c'],
    ['long non-ASCII string', undefined, '3eeab4380d7c69d8a3ab540ca4a41763'],
    [
      'unicode keys',
      '{"":8,"10":6,"9":7,"A":3,"z":2,"\u00e9":1,"\\ud800":9,"\ud83d\ude00":4,"\uffff":5}',
      '15f7d92f9ba41ebafe1517ad4344b1b9',
    ],
    ['own __proto__ key', '{"__proto__":{"admin":true},"amount":5}', '1c0c326777d416cf95f4ee49c81be99d'],
    ['__proto__ key nested', '{"a":[{"__proto__":null,"constructor":1}]}', 'da3f6c6a2b383ac46709562b632e1039'],
    ['null prototype', '{"a":1,"b":2}', '43258cff783fe7036d8a43033f830adf'],
    ['class instance', '{"x":1}', '5041bf1f713df204784353e82f6a4a53'],
    ['toJSON is not called', '{"a":1}', '015abd7f5cc57a2dd94b7590f04ad808'],
    ['nested arrays', '[[[]],[[1,[2,[3,[4]]]]],[[],{}],[[null]]]', '0a871be791dfa8dbd08ae2258f67f7bb'],
    ['sparse array', '[null,1,null,2]', '85aecdf2c84c93d28fa87e24a4c5059d'],
    ['dates', '["1970-01-01T00:00:00.000Z",null,{"at":"2023-11-14T22:13:20.000Z"}]', 'fc21856281484f0a87408f83b4efd652'],
    [
      'collections and boxes',
      '[{},{},{"0":3,"1":1,"2":2},{"0":"b","1":"o","2":"x","3":"e","4":"d"},{},{},{},{}]',
      'f027ac56fb7d1d044365d855f707d9f3',
    ],
    ['cycles', '{"a":1,"list":["[circular]",{"back":"[circular]"}],"self":"[circular]"}', 'dbbff004efca70297ef97f3d5bc9904f'],
    [
      'a value shared twice',
      '{"a":{"id":1,"tags":["a"]},"b":[{"id":1,"tags":["a"]},{"id":1,"tags":["a"]}]}',
      '9012c72a727d9f8f9bbff950ec43df0c',
    ],
    ['sorted at every depth', '{"a":{"w":"x","z":{"x":2,"y":1}},"b":[3,{"c":2,"d":1}]}', '0768c55da4c6bd0ef993ea8772d95343'],
    ['a call fingerprint', '["read_file",{"encoding":"utf8","path":"src/main.rs"}]', 'fa7b797c4129f4179def69f8acf52ee8'],
    ['an approval digest', '["transfer",{"amountCents":50000,"to":"bob"}]', 'b3529aec075bb06d991bebb54733026c'],
    ['an idempotency key', '["default","run-1","charge_card","43258cff783fe7036d8a43033f830adf"]', '81ad1bb003151eca8e37bd3ea7d4c58d'],
    ['an idempotency key, non-ASCII', '["t\u00e9\\"nant","run-\u00e9","charge","\\ud800"]', '87cfb6c9c91142524858a5d02ce34bdb'],
    ['a large result', undefined, 'e2465087bb2634d56a82ef3e5d281000'],
  ]

  it('writes the same canonical JSON and digest as before for every value of the corpus', () => {
    expect(stored.map(([label]) => label)).toEqual(corpus.map(([label]) => label))
    for (const [i, [label, value]] of corpus.entries()) {
      const [, json, digest] = stored[i] as [string, string | undefined, string]
      if (json !== undefined) expect({ label, json: canonicalJson(value) }).toEqual({ label, json })
      expect({ label, digest: hashOf(value) }).toEqual({ label, digest })
      expect(hashOf(value)).toBe(sha(canonicalJson(value)))
    }
  })
})
