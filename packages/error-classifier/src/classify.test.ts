// biome-ignore-all lint/suspicious/noThenProperty: classifier rules are { match, then } data
import { ToolError } from '@shallot/core'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { errorFacts } from './error-facts.js'
import { classify, tryClassify } from './index.js'

describe('classify', () => {
  it('is a pure function: the same throwable gives the same ToolError fields', () => {
    const error = Object.assign(new Error('slow down'), { status: 429, headers: { 'retry-after': '2' } })
    expect(classify(error).toJSON()).toEqual(classify(error).toJSON())
    expect(classify(error).toJSON()).toEqual({
      code: 'rate_limited',
      category: 'transient',
      message: 'HTTP 429 Too Many Requests: slow down',
      hint: 'wait before calling this tool again',
      retryable: true,
      safeToRepeat: true,
      retryAfterMs: 2000,
    })
  })

  it('keeps the original throwable as cause and the matching rule in details, never in the text', () => {
    const error = Object.assign(new Error('gone'), { status: 404 })
    const classified = classify(error)
    expect(classified.cause).toBe(error)
    expect(classified.details).toEqual({ rule: 'http_404', status: 404 })
    expect(tryClassify({ code: 'ECONNRESET' })?.details).toEqual({ rule: 'connection_lost', errorCodes: ['ECONNRESET'] })
  })

  it('turns a throwable no rule recognises into tool_panic, which tryClassify leaves alone', () => {
    expect(tryClassify(new Error('boom'))).toBeUndefined()
    expect(classify(new Error('boom'), { tool: 'search' }).toJSON()).toEqual({
      code: 'tool_panic',
      category: 'recoverable',
      message: 'Tool "search" panicked: boom',
      retryable: false,
      safeToRepeat: false,
    })
  })

  it('applies user rules from its options', () => {
    const options = { rules: [{ match: { status: 404 }, then: { code: 'no_such_order', category: 'recoverable' as const } }] }
    expect(classify({ status: 404 }, options).code).toBe('no_such_order')
    expect(classify({ status: 404 }, options).code).toBe('no_such_order')
  })

  it('reads its options as they are at each call: one changed since an earlier call is applied, or refused', () => {
    const options: { maxLength: number; rules: { match: { status: number }; then: { code: string; category: 'recoverable' } }[] } = {
      maxLength: 500,
      rules: [{ match: { status: 404 }, then: { code: 'no_such_order', category: 'recoverable' } }],
    }
    expect(classify({ status: 404 }, options).code).toBe('no_such_order')
    options.rules[0] = { match: { status: 404 }, then: { code: 'no_such_invoice', category: 'recoverable' } }
    expect(classify({ status: 404 }, options).code).toBe('no_such_invoice')
    options.maxLength = 5
    expect(() => classify({ status: 404 }, options)).toThrow(/^classify\(\): option maxLength: .*\(got 5\)$/)
  })

  it.each([
    ['null', null],
    ['undefined', undefined],
    ['a string', 'it broke'],
    ['a number', 42],
    ['a bigint', 10n],
    ['a symbol', Symbol('odd')],
    ['a function', () => 1],
    ['a plain object', { what: 'no' }],
    ['an empty AggregateError', new AggregateError([])],
  ])('survives %s: no rule matches, and classify still answers', (_what, thrown) => {
    expect(tryClassify(thrown)).toBeUndefined()
    expect(ToolError.is(classify(thrown))).toBe(true)
  })

  it('reads odd payloads as (unknown payload)', () => {
    expect(classify(null, { tool: 't' }).message).toBe('Tool "t" panicked: (unknown payload)')
    expect(classify({}, { tool: 't' }).message).toBe('Tool "t" panicked: (unknown payload)')
  })

  it('survives getters that throw and revoked proxies', () => {
    const hostile = Object.defineProperties(new Error('x'), {
      status: {
        get() {
          throw new Error('no status for you')
        },
      },
      code: {
        get() {
          throw new Error('nor code')
        },
      },
      cause: {
        get() {
          throw new Error('nor cause')
        },
      },
    })
    expect(tryClassify(hostile)).toBeUndefined()
    const { proxy, revoke } = Proxy.revocable({}, {})
    revoke()
    expect(tryClassify(proxy)).toBeUndefined()
    expect(classify(proxy).code).toBe('tool_panic')
    const trap = new Proxy(
      {},
      {
        get() {
          throw new Error('trap')
        },
        getPrototypeOf() {
          throw new Error('trap')
        },
      },
    )
    expect(classify(trap).code).toBe('tool_panic')
  })

  it('follows cause chains without looping on cycles or walking 10,000 levels', () => {
    const a: { message: string; cause?: unknown } = { message: 'a' }
    const b = { message: 'b', cause: a, code: 'ECONNRESET' }
    a.cause = b
    expect(classify(a).code).toBe('network_error')
    let deep: unknown = Object.assign(new Error('bottom'), { code: 'ECONNREFUSED' })
    for (let i = 0; i < 10_000; i++) deep = new Error(`level ${i}`, { cause: deep })
    // The code is 10,000 levels down: past the 16 errors the classifier reads, so it is not found.
    expect(tryClassify(deep)).toBeUndefined()
    expect(errorFacts(deep).messages).toHaveLength(3)
  })

  it('never throws and always answers a ToolError within the text cap, whatever is thrown', () => {
    fc.assert(
      fc.property(fc.anything({ withBigInt: true, withMap: true, withSet: true, withNullPrototype: true }), (thrown) => {
        const error = classify(thrown)
        return ToolError.is(error) && error.message.length <= 500
      }),
    )
  })

  it('reads HTTP shapes from an error or from its cause', () => {
    expect(errorFacts(new Error('wrapped', { cause: { response: { status: 503, headers: { 'retry-after': '1' } } } })).status).toBe(503)
    expect(classify(new Error('wrapped', { cause: { response: { status: 503, headers: { 'retry-after': '1' } } } })).retryAfterMs).toBe(
      1000,
    )
    expect(errorFacts({ status: 'error' }).status).toBeUndefined()
    expect(errorFacts({ status: 1 }).status).toBeUndefined()
  })
})

describe('the stack of a classified error', () => {
  it('is the thrown error’s, under cause: the ToolError adds no frames of the classifier’s, and the limit is left as it was', () => {
    const limit = Error.stackTraceLimit
    function chargeTheCard(): never {
      throw Object.assign(new Error('connect ECONNRESET 10.0.0.1:443'), { code: 'ECONNRESET' })
    }
    let thrown: unknown
    try {
      chargeTheCard()
    } catch (err) {
      thrown = err
    }
    const classified = classify(thrown)
    expect(classified.code).toBe('network_error')
    expect(classified.stack).not.toMatch(/\n\s+at /)
    expect((classified.cause as Error).stack).toMatch(/at chargeTheCard/)
    expect(Error.stackTraceLimit).toBe(limit)
    // A ToolError made anywhere else keeps its own stack.
    expect(new ToolError('timeout', 'slow').stack).toMatch(/\n\s+at /)
  })
})

describe('classify() options that are not an object', () => {
  it.each([
    ['a string (the tool name where options go)', 'charge'],
    ['a number', 7],
    ['an array', ['rules']],
  ])('refuses %s with one line saying an object is expected, not one per character', (_label, options) => {
    const err = new Error('boom')
    for (const call of [() => classify(err, options as never), () => tryClassify(err, options as never)]) {
      let refusal: unknown
      try {
        call()
      } catch (caught) {
        refusal = caught
      }
      expect(refusal).toBeInstanceOf(Error)
      expect(String((refusal as Error).message)).toMatch(/^classify\(\): /)
      expect(String((refusal as Error).message)).not.toMatch(/unknown option "0"/)
      expect(String((refusal as Error).message)).toMatch(/object/)
    }
  })
})
