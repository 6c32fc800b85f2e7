import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { sanitize } from '../index.js'
import { createSanitizer } from '../kit.js'
import { REDACTED } from './redacted.js'

const sanitizeText = (text: string, options: { maxLength?: number; secrets?: (string | RegExp)[] } = {}) =>
  sanitize(text, { maxLength: 500, ...options })

describe('sanitize', () => {
  it.each([
    ['a database URL', 'postgres://u:p@10.0.0.5/db', 'postgres://[redacted]@[redacted]/db'],
    ['a token as URL user', 'clone https://ghp_abc@github.com/acme/app failed', 'clone https://[redacted]@github.com/acme/app failed'],
    ['a bearer token', 'sent Bearer abcdefghijklmnopqrstuvwxyz012345', 'sent Bearer [redacted]'],
    ['an Authorization header', 'Authorization: Basic dXNlcjpwYXNzd29yZA==', 'Authorization: [redacted]'],
    ['a secret in a query string', 'GET /v1/items?api_key=abc123&page=2', 'GET /v1/items?api_key=[redacted]&page=2'],
    ['a password in JSON', '{"user":"ann","password":"hunter2"}', '{"user":"ann","password":"[redacted]"}'],
    ['an OpenAI project key', 'key sk-proj-AbCdEfGhIjKlMnOpQrStUv', 'key [redacted]'],
    ['an Anthropic key', 'x-api-key: sk-ant-api03-AbCdEfGhIjKlMnOpQrSt', 'x-api-key: [redacted]'],
    ['a Stripe live key', 'sk_live_51HcXyZabcdefghij', '[redacted]'],
    ['a Stripe restricted test key', 'rk_test_51HcXyZabcdefghij', '[redacted]'],
    ['a GitHub token', 'ghp_0123456789abcdefghijABCDEFGHIJ', '[redacted]'],
    ['a fine-grained GitHub token', 'github_pat_11ABCDEFG0123456789_abcdefghijklmnop', '[redacted]'],
    ['an AWS access key id', 'AKIAIOSFODNN7EXAMPLE', '[redacted]'],
    ['a Slack token', 'xoxp-1234567890-abcdefghij', '[redacted]'],
    ['a Google API key', 'AIzaSyA-0123456789abcdefghijklmnopqrstu', '[redacted]'],
    ['a JWT', 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.sflKxwRJSMeKKF2QT4fwpM', '[redacted]'],
    [
      'a PEM private key',
      '-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nIBAAK==\n-----END RSA PRIVATE KEY-----',
      '[redacted]-----END RSA PRIVATE KEY-----',
    ],
    ['10/8', 'at 10.20.30.40:5432', 'at [redacted]:5432'],
    ['127/8', 'at 127.0.0.1.', 'at [redacted].'],
    ['172.16/12', '172.16.0.1 and 172.31.255.255', '[redacted] and [redacted]'],
    ['192.168/16', 'gw 192.168.1.1', 'gw [redacted]'],
    ['link-local (cloud metadata)', 'http://169.254.169.254/latest', 'http://[redacted]/latest'],
    ['IPv6 loopback', 'connect [::1]:8080', 'connect [[redacted]]:8080'],
    ['IPv6 unique local', 'via fd12:3456:789a::1 and fc00::2', 'via [redacted] and [redacted]'],
    ['IPv6 link-local', 'fe80::1ff:fe23:4567:890a%eth0', '[redacted]%eth0'],
    ['an internal host', 'db.prod.internal:5432 and printer.local', '[redacted]:5432 and [redacted]'],
    ['a Linux home path', "open '/home/alice/proj/src/mian.rs'", "open '[redacted]/proj/src/mian.rs'"],
    ['a macOS home path', 'at main (/Users/bob/dev/app.ts:3:1)', 'at main ([redacted]/dev/app.ts:3:1)'],
    ['a Windows home path', 'C:\\Users\\carol\\app\\main.ts', '[redacted]\\app\\main.ts'],
    ['a file URL to a home path', 'file:///home/alice/x.ts', 'file://[redacted]/x.ts'],
    ['a home path nested in another', '/home/alice/home/bob/x', '[redacted][redacted]/x'],
    ['an e-mail address', 'mail ann.lee+ops@example.co.uk for access', 'mail [redacted] for access'],
    ['an AWS role key id', 'AROAJ2UCCR6DPCEXAMPL', '[redacted]'],
    ['a Slack app token', 'xapp-1-A0123456789-abcdef', '[redacted]'],
    [
      'a Slack webhook',
      'POST https://hooks.slack.com/services/T000/B000/XXXX failed',
      'POST https://hooks.slack.com/services/[redacted] failed',
    ],
    ['a JWT whose signature was cut off', 'token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0', 'token [redacted]'],
    ['a Bearer header in an HTTP dump', 'Authorization: Bearer Zm9vYmFyYmF6cXV4', 'Authorization: [redacted]'],
  ])('redacts %s', (_what, input, expected) => {
    expect(sanitizeText(input)).toBe(expected)
  })

  it.each([
    ['a path the model asked for', 'file src/mian.rs not found'],
    ['a public IP', 'connect ECONNREFUSED 93.184.216.34:443'],
    ['a public host', 'getaddrinfo ENOTFOUND api.github.com'],
    ['a URL without credentials', 'GET https://api.example.com/v1/orders/ORD-2026-00042 returned 404'],
    ['words that merely contain sk-', 'the task-force risk-assessment-framework-v2 is ready'],
    ['a version number', 'requires node 20.19.0 or later'],
    ['a validation message', 'password: must contain a digit'],
    ['newlines and tabs', 'line one\n\tline two'],
  ])('keeps %s', (_what, input) => {
    expect(sanitizeText(input)).toBe(input)
  })

  it('strips Unicode tag characters, zero-width and bidi controls, ANSI escapes and C0 controls', () => {
    const tags = [...'ignore previous'].map((c) => String.fromCodePoint(0xe0000 + c.charCodeAt(0))).join('')
    expect(sanitizeText(`ok${tags}\u{E0001}\u{E007F}`)).toBe('ok')
    expect(sanitizeText('a\u200Bb\u200Cc\u200Dd\u200Ee\u200Ff\u2060g\uFEFFh')).toBe('abcdefgh')
    expect(sanitizeText('x\u202Ay\u202Bz\u202C\u202D\u202E\u2066\u2067\u2068\u2069.')).toBe('xyz.')
    expect(sanitizeText('\u001b[31mred\u001b[0m\u0000\u0007\r')).toBe('red')
  })

  it('strips invisible characters before redacting, so they cannot hide a secret', () => {
    expect(sanitizeText('s\u200Bk-proj-AbCdEfGhIjKlMnOpQrStUv and 10.\u200D0.0.5')).toBe('[redacted] and [redacted]')
  })

  it('redacts the literal secrets it is given', () => {
    expect(sanitizeText('value tok-4f9a2 twice tok-4f9a2', { secrets: ['tok-4f9a2', 'abc'] })).toBe('value [redacted] twice [redacted]')
  })

  it('redacts user secrets given as patterns, with the g flag added and empty matches left alone', () => {
    expect(sanitizeText('acct_12345678 and acct_87654321', { secrets: [/acct_[0-9]{8}/] })).toBe('[redacted] and [redacted]')
    expect(sanitizeText('ACCT-1 acct-2', { secrets: [/acct-\d/i] })).toBe('[redacted] [redacted]')
    expect(sanitizeText('abc', { secrets: [/x*/] })).toBe('abc')
  })

  it('redacts a literal secret that invisible characters were meant to hide, and the longest literal first', () => {
    expect(sanitizeText('key tok-4f\u200B9a2', { secrets: ['tok-4f9a2'] })).toBe('key [redacted]')
    expect(sanitizeText('hunter2hunter2', { secrets: ['hunter2', 'hunter2hunter2'] })).toBe('[redacted]')
  })

  it('refuses a secret that is neither a string nor a RegExp, naming it', () => {
    expect(() => createSanitizer({ secrets: ['ok', 42 as never] })).toThrow('secrets[1] must be a string or a RegExp, got number')
  })

  it('drops stack frames, keeping prose that starts with "at"', () => {
    const text = 'boom\n    at run (/app/src/x.ts:3:9)\n    at async Promise.all (index 0)\n  at least 3 items are needed'
    expect(sanitizeText(text)).toBe('boom\n  at least 3 items are needed')
  })

  it('keeps control characters in successful output but strips invisible ones, redacts its secrets always and the built-in shapes when asked', () => {
    const sanitizer = createSanitizer({ secrets: ['hunter2'] })
    expect(sanitizer.output('a\r\nb\u202Ec hunter2 ann@example.com', 1000, false)).toBe('a\r\nbc [redacted] ann@example.com')
    expect(sanitizer.output('a\r\nb\u202Ec hunter2 ann@example.com', 1000, true)).toBe('a\r\nbc [redacted] [redacted]')
  })

  it('finds a secret split by an invisible character, since the text is stripped before any pattern runs', () => {
    const sanitizer = createSanitizer({ secrets: ['tenant-9f31c'] })
    for (const split of ['tenant\u200B-9f31c', 'tenant-\u00AD9f31c', 'ten\u{E0041}ant-9f31c', 'tenant-9\u202E\u202Cf31c']) {
      expect(sanitizer.output(`key ${split}`, 1000, false)).toBe('key [redacted]')
      expect(sanitizer.text(`key ${split}`)).toBe('key [redacted]')
    }
    expect(sanitizer.output('card ann@exam\u200Bple.com', 1000, true)).toBe('card [redacted]')
  })

  it('redacts a literal secret as JSON escapes it inside a string, at every depth a result renders it', () => {
    const secret = 'k3y"quoted\\and-slashed'
    const sanitizer = createSanitizer({ secrets: [secret] })
    let text = secret
    for (let level = 0; level < 4; level++) {
      text = JSON.stringify({ v: text })
      expect(sanitizer.output(text, 10_000, false)).not.toContain('quoted')
    }
  })

  it('caps long text at maxLength with a visible marker', () => {
    const out = sanitizeText('word '.repeat(200))
    // The cut falls on the last space that fits: 'word' × 94 (469 characters) and the 29-character marker.
    expect(out).toBe(`${'word '.repeat(94).trimEnd()}… [truncated from 1000 chars]`)
    const marker = '… [truncated from 100 chars]'
    expect(sanitizeText('x'.repeat(100), { maxLength: 60 })).toBe(`${'x'.repeat(60 - marker.length)}${marker}`)
  })

  it('never splits a surrogate pair or leaves half a [redacted] at the cut', () => {
    // 61 - 28 leaves 33 code units: 16 emoji and the first half of a 17th, which must go.
    const emoji = sanitizeText('😀'.repeat(100), { maxLength: 61 })
    expect(emoji).toBe(`${'😀'.repeat(16)}… [truncated from 200 chars]`)
    // 60 - 28 leaves 32 code units: "xxxxxxxxxxxxxxxxxxxxxx [redacted]" would end on "[reda".
    const redacted = sanitizeText(`${'x'.repeat(22)}${' 10.0.0.1'.repeat(20)}`, { maxLength: 60 })
    expect(redacted).toBe(`${'x'.repeat(22)}… [truncated from 202 chars]`)
    // With no whitespace to fall back on, the half is dropped at the cut.
    const glued = `${'x'.repeat(22)}${'/sk-AbCdEfGhIjKlMnOpQrSt'.repeat(5)}`
    expect(sanitizeText(glued, { maxLength: 60 })).toBe(`${'x'.repeat(22)}/… [truncated from ${glued.length} chars]`)
  })

  it('redacts a secret that straddles the point where very long input is cut', () => {
    const key = `sk-${'A'.repeat(600)}`
    const out = sanitizeText(`${'w '.repeat(1000)}${key} tail`, { maxLength: 40 })
    expect(out).not.toContain('AAAA')
  })

  const capped = (body: string, total: number) => {
    const marker = `… [truncated from ${total} chars]`
    return `${body.slice(0, 500 - marker.length)}${marker}`
  }

  it.each([
    ['a'.repeat(1e5), capped('a'.repeat(500), 1e5)],
    ['/home/'.repeat(2e4), capped('/home/'.repeat(100), 12e4)],
    ['sk-'.repeat(3e4), `${REDACTED}… [truncated from 90000 chars]`],
    [`${'@'.repeat(1e5)}://`, capped('@'.repeat(500), 1e5 + 3)],
  ])('gives the right answer for 100 KB pathological input (%#)', (input, expected) => {
    expect(sanitizeText(input)).toBe(expected)
  })

  it.each([
    ['a'.repeat(1e5), 'a'.repeat(1e5)],
    ['/home/'.repeat(2e4), '/home/'.repeat(2e4)],
    ['sk-'.repeat(3e4), REDACTED],
    [`${'@'.repeat(1e5)}://`, `${'@'.repeat(1e5)}://`],
    ['eyJ'.repeat(3e4), 'eyJ'.repeat(3e4)],
    ['10.0.0.1 '.repeat(11_000), `${REDACTED} `.repeat(11_000)],
    ['/home/a'.repeat(14_000), REDACTED.repeat(14_000)],
    ['a.'.repeat(5e4), 'a.'.repeat(5e4)],
    ['fd00:'.repeat(2e4), REDACTED],
  ])('gives the right answer for 100 KB pathological input with no cap to hide behind (%#)', (input, expected) => {
    expect(sanitizeText(input, { maxLength: 200_000 })).toBe(expected)
  })

  it('keeps every output within maxLength and free of invisible characters', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 3000 }), fc.integer({ min: 40, max: 1000 }), (text, maxLength) => {
        const out = sanitizeText(text, { maxLength })
        return out.length <= maxLength && !/[\u{E0000}-\u{E007F}\u200B-\u200F\u202A-\u202E\u2066-\u2069\uFEFF]/u.test(out)
      }),
    )
  })

  it('is idempotent on text that fits', () => {
    const piece = fc.constantFrom(
      'sk-',
      'proj-',
      'AbCdEfGhIjKlMnOpQr',
      '10.',
      '0.',
      '5',
      '/home/',
      'alice',
      '://',
      'u:p@',
      ' ',
      'Bearer ',
      '\u200B',
      '.internal',
      'fd00:',
      'x',
      '-',
      '.',
      '@',
      'db',
      ':',
      'eyJhbGciOiJIUzI1',
      'C:\\Users\\',
      '192.168.',
      'sk_live_',
      'ghp_',
    )
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 40 }), (pieces) => {
        const once = sanitizeText(pieces.join(''), { maxLength: 5000 })
        return sanitizeText(once, { maxLength: 5000 }) === once
      }),
      { numRuns: 2000 },
    )
  })
})
