import { createStack, defineTool, OptionsError, type StackEvent, type ToolEffect, ToolError, type ToolResult } from '@shallot/core'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { plantedResult, plantedValues } from './corpus.fixture.js'
import { type RedactOptions, redact } from './index.js'

/** A stack whose one tool answers whatever the test sets, with redact() in front, and every redact event. */
function setup(options?: RedactOptions, effect: ToolEffect = 'read') {
  let answer: () => unknown = () => 'ok'
  const tool = defineTool({
    name: 'lookup',
    description: 'looks something up',
    input: z.object({}),
    effect,
    execute: () => answer(),
  })
  const stack = createStack({ tools: [tool], middleware: [redact(options)], limits: { maxOutputChars: 10_000_000 } })
  const events: StackEvent[] = []
  stack.on((event) => {
    if (event.type.startsWith('redact.')) events.push(event)
  })
  let n = 0
  const call = async (value: unknown | (() => unknown)): Promise<ToolResult> => {
    answer = typeof value === 'function' ? (value as () => unknown) : () => value
    return stack.dispatch({ id: `c${++n}`, name: 'lookup', args: {} })
  }
  return { call, events }
}

/** Everything of a result a model or a host can read: the text, the value, the error. */
const everything = (result: ToolResult) => `${result.content}\n${JSON.stringify(result.value) ?? ''}\n${JSON.stringify(result.error) ?? ''}`

const employeeId = { name: 'employee_id', pattern: /\bEMP-\d{6}\b/ }

describe('redact: the planted corpus', () => {
  const planted = plantedValues()

  it('plants 200 values across every detector', () => {
    expect(planted).toHaveLength(200)
    expect(new Set(planted.map((p) => p.detector))).toEqual(new Set(['email', 'card', 'iban', 'ip', 'api_key', 'secret', 'employee_id']))
  })

  for (const strategy of ['redact', 'mask', 'hash'] as const) {
    it(`${strategy}: none of the 200 values reaches the model, wherever it is planted`, async () => {
      const { call, events } = setup({ strategy, patterns: [employeeId] })
      const result = await call(plantedResult(planted))
      expect(result.ok).toBe(true)
      const seen = everything(result)
      const leaked = planted.filter(({ value }) => seen.includes(value))
      expect(leaked).toEqual([])
      // Cards written with separators must not survive as bare digits either.
      const digits = seen.replace(/[^0-9]/g, ' ')
      expect(planted.filter((p) => p.detector === 'card' && digits.includes(p.value.replace(/\D/g, '')))).toEqual([])
      const found = events.at(-1)?.found as Record<string, number>
      expect(Object.keys(found).sort()).toEqual(['api_key', 'card', 'email', 'employee_id', 'iban', 'ip', 'secret'])
      expect(events.at(-1)).not.toHaveProperty('raw')
    })
  }

  it('block: the result is withheld with blocked_by_policy naming the detectors, never a value', async () => {
    const { call } = setup({ strategy: 'block', patterns: [employeeId] })
    const result = await call(plantedResult(planted))
    expect(result.error).toMatchObject({ code: 'blocked_by_policy', category: 'recoverable', retryable: false, safeToRepeat: true })
    expect(planted.filter(({ value }) => everything(result).includes(value))).toEqual([])
    expect(result.content).toContain("the result of 'lookup' was withheld: it holds an e-mail address, a card number")
    expect(result.content).toContain("a value matching 'employee_id'")
  })
})

describe('redact: strategies', () => {
  it('redact, mask, hash (keyed and stable) and block, per detector', async () => {
    const options: RedactOptions = {
      strategies: { email: 'mask', card: 'mask', ip: 'hash', iban: 'redact' },
      hashKey: 'a-key-of-sixteen-characters',
    }
    const { call } = setup(options)
    const text = 'mail ada@example.com, card 4111 1111 1111 1111, from 203.0.113.9, IBAN DE89 3704 0044 0532 0130 00.'
    const result = await call(text)
    expect(result.content).toMatch(
      /^mail a\*\*\*@example\.com, card \*\*\*\* \*\*\*\* \*\*\*\* 1111, from \[ip:[0-9a-f]{16}\], IBAN \[redacted:iban\]\.$/,
    )
    const again = await call('from 203.0.113.9')
    expect(again.content.slice(5)).toBe(/\[ip:[0-9a-f]{16}\]/.exec(result.content)?.[0])
    const other = setup({ ...options, hashKey: 'another-key-of-sixteen-chars' })
    expect((await other.call('from 203.0.113.9')).content).not.toBe(again.content)
  })

  it('block on a write says the effect stands: not safe to repeat', async () => {
    const { call } = setup({ strategies: { api_key: 'block' } }, 'write')
    const result = await call({ created: true, token: `sk-proj-${'a1'.repeat(20)}` })
    expect(result.error).toMatchObject({ code: 'blocked_by_policy', safeToRepeat: false })
    expect(result.error?.hint).toMatch(/its effect stands, do not repeat it/)
    expect(result.content).not.toContain('a1a1')
  })

  it('a result with nothing to redact is handed on as it was: same value, no event', async () => {
    const { call, events } = setup()
    const value = { when: new Date(0), list: [1, 2, 3], text: 'version 1.2.3, 12:30:45, std::vector, order 12345' }
    const result = await call(value)
    expect(result.value).toBe(value)
    expect(events).toEqual([])
  })

  it('does not take look-alikes: a Luhn-invalid card, a bad IBAN, a time, a version, a MAC-like pair', async () => {
    const { call } = setup()
    const text = 'card 4111 1111 1111 1112; IBAN GB82 WEST 1234 5698 7654 33; 12:30:45; v1.2.3; 00:1a:2b:3c:4d:5e; 999.1.1.1'
    expect((await call(text)).content).toBe(text)
  })
})

describe('redact: hostile results', () => {
  it('__proto__ keys stay own keys and pollute nothing; redacted keys that collide stay two keys', async () => {
    const { call } = setup()
    const value = JSON.parse('{"__proto__": {"email": "eve@example.com"}, "a@example.com": 1, "b@example.com": 2}')
    const result = await call(value)
    const out = result.value as Record<string, unknown>
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype)
    expect(Object.hasOwn(out, '__proto__')).toBe(true)
    expect(result.content).toBe('{"__proto__":{"email":"[redacted:email]"},"[redacted:email]":1,"[redacted:email] (2)":2}')
    expect(({} as Record<string, unknown>).email).toBeUndefined()
  })

  it('cycles and nesting past maxNesting are replaced, unread', async () => {
    const { call } = setup({ maxNesting: 5 })
    const cyclic: Record<string, unknown> = { mail: 'ann@example.com' }
    cyclic.self = cyclic
    let deep: unknown = 'zed@example.com'
    for (let i = 0; i < 10; i++) deep = { deep }
    const result = await call({ cyclic, deep })
    expect(result.content).toContain('"self":"[circular]"')
    expect(result.content).toContain('[redacted: nested too deep]')
    expect(result.content).not.toMatch(/ann@|zed@/)
  })

  it('a value that throws while read, and one larger than maxChars, are withheld', async () => {
    const { call } = setup({ maxChars: 1000 })
    const trap = {
      get secret() {
        throw new Error('getter says no')
      },
    }
    expect((await call({ trap })).error).toMatchObject({
      code: 'blocked_by_policy',
      message: expect.stringContaining('a value that could not be read'),
    })
    expect((await call('x'.repeat(1001))).error?.message).toContain('more text than the redaction layer reads')
  })

  it('numbers, bigints, boxed strings and toJSON are read the way JSON shows them', async () => {
    const { call } = setup()
    const result = await call({
      n: 4111111111111111,
      b: 5555555555554444n,
      boxed: Object('sam@example.com'),
      at: { toJSON: () => 'owner: kim@example.com' },
      small: 42,
    })
    expect(result.content).toBe(
      '{"n":"[redacted:card]","b":"[redacted:card]","boxed":"[redacted:email]","at":"owner: [redacted:email]","small":42}',
    )
  })

  it('a soft error the tool throws is redacted too, code and flags kept', async () => {
    const { call, events } = setup()
    const result = await call(() => {
      throw new ToolError('not_found', 'no account for joe@example.com', { hint: 'card 4111-1111-1111-1111 unknown', retryable: false })
    })
    expect(result.error).toMatchObject({
      code: 'not_found',
      message: 'no account for [redacted:email]',
      hint: 'card [redacted:card] unknown',
    })
    expect(events.at(-1)).toMatchObject({ type: 'redact.applied', in: 'error', found: { email: 1, card: 1 } })
  })

  it('the raw value reaches listeners only with rawInEvents', async () => {
    const hidden = setup()
    await hidden.call('mail ada@example.com')
    expect(JSON.stringify(hidden.events)).not.toContain('ada@example.com')
    const shown = setup({ rawInEvents: true })
    const result = await shown.call('mail ada@example.com')
    expect(shown.events.at(-1)).toMatchObject({ type: 'redact.applied', raw: 'mail ada@example.com' })
    expect(result.content).toBe('mail [redacted:email]')
  })

  it('1 MB results of pathological text complete (the timing is the bench row)', async () => {
    const { call } = setup()
    const mb = 1_000_000
    for (const unit of ['a@', '2 ', 'sk-', 'DE89 ', 'f:', `${'x'.repeat(99)} ana@example.com `]) {
      const result = await call(unit.repeat(Math.ceil(mb / unit.length)))
      expect(result.ok).toBe(true)
    }
  })

  it('only the tools listed, when tools is given', async () => {
    const { call } = setup({ tools: ['other'] })
    expect((await call('ada@example.com')).content).toBe('ada@example.com')
  })
})

describe('redact: options', () => {
  it('refuses a pattern that can backtrack catastrophically, naming it and the fix', () => {
    expect(() => redact({ patterns: [{ name: 'bad', pattern: /(a+)+$/ }] })).toThrow(OptionsError)
    expect(() => redact({ patterns: [{ name: 'bad', pattern: /(?:\w+\s?)*$/ }] })).toThrow(
      /patterns\[0\]\.pattern: repeats a group that itself repeats .* rewrite it without nested repetition/,
    )
    expect(() => redact({ patterns: [{ name: 'bad', pattern: /(a)\1/ }] })).toThrow(/backreference/)
    expect(() =>
      redact({
        patterns: [
          { name: 'ok', pattern: /\bEMP-\d{6}\b/ },
          { name: 'ok2', pattern: /(?:ab){2}-[0-9]+/ },
        ],
      }),
    ).not.toThrow()
  })

  it('refuses unknown names, clashing names, short literals and a short hash key', () => {
    expect(() => redact({ strategies: { phone: 'mask' } })).toThrow(/strategies\.phone: names no detector in use/)
    expect(() => redact({ patterns: [{ name: 'email', pattern: 'abcd' }] })).toThrow(/already a detector's name/)
    expect(() => redact({ patterns: [{ name: 'x', pattern: 'ab' }] })).toThrow(/patterns\[0\]\.pattern/)
    expect(() => redact({ hashKey: 'short' })).toThrow(/hashKey: must be at least 16 characters/)
    expect(() => redact(JSON.parse('{"__proto__": {"strategy": "block"}}'))).toThrow(/__proto__/)
  })

  it('a literal pattern matches exactly, special characters included; detectors can be turned off', async () => {
    const { call } = setup({ detectors: ['card'], patterns: [{ name: 'codename', pattern: 'Project (Nightjar)' }] })
    expect((await call('Project (Nightjar) and ada@example.com')).content).toBe('[redacted:codename] and ada@example.com')
  })

  it('your patterns read short plain words too, keys included (the built-ins skip them: none can match there)', async () => {
    const { call } = setup({
      patterns: [
        { name: 'codename', pattern: 'Nightjar' },
        { name: 'badge', pattern: /\bB\d{4}\b/ },
      ],
    })
    expect((await call({ Nightjar: 'B1234', other: 'Nightjar_2' })).content).toBe(
      '{"[redacted:codename]":"[redacted:badge]","other":"[redacted:codename]_2"}',
    )
  })
})
