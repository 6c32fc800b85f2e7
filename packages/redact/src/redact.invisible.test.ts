import { readFileSync } from 'node:fs'
import { createStack, defineTool, ToolError } from '@shallot/core'
import { createSanitizer } from '@shallot/core/kit'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { type RedactOptions, redact } from './index.js'

// The README's table of detectors × invisible-character classes is generated here from what the model
// reads, so it cannot go stale: a value with any invisible character inside must read exactly as the same
// value without it, in a result and in an error.

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => String.fromCodePoint(from + i))

/** Every character core's sanitizer strips, by class: the test below proves the union is exactly that set. */
const CLASSES: readonly { readonly name: string; readonly chars: readonly string[] }[] = [
  { name: 'zero-width', chars: [...range(0x200b, 0x200d), ...range(0x2060, 0x2064), '\uFEFF', '\u180E'] },
  { name: 'bidi', chars: ['\u061C', '\u200E', '\u200F', ...range(0x202a, 0x202e), ...range(0x2066, 0x2069)] },
  { name: 'tag', chars: range(0xe0000, 0xe007f) },
  { name: 'soft hyphen, other format', chars: ['\u00AD', '\u2065', ...range(0x206a, 0x206f)] },
]

const CLASS_RANGES: Record<string, string> = {
  'zero-width': 'U+200B–U+200D, U+2060–U+2064, U+FEFF, U+180E',
  bidi: 'U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069',
  tag: 'U+E0000–U+E007F',
  'soft hyphen, other format': 'U+00AD, U+2065, U+206A–U+206F',
}

interface Row {
  readonly detector: string
  readonly options: RedactOptions
  readonly samples: readonly string[]
}

const ROWS: readonly Row[] = [
  { detector: 'email', options: { detectors: ['email'] }, samples: ['ann.lee+bill@example.com'] },
  { detector: 'card', options: { detectors: ['card'] }, samples: ['4111 1111 1111 1111', '5500-0000-0000-0004', '4111111111111111'] },
  { detector: 'iban', options: { detectors: ['iban'] }, samples: ['DE89370400440532013000', 'GB82 WEST 1234 5698 7654 32'] },
  { detector: 'ip', options: { detectors: ['ip'] }, samples: ['203.0.113.7', '2001:db8::8a2e:370:7334'] },
  {
    detector: 'api_key',
    options: { detectors: ['api_key'] },
    samples: [
      'sk-ant-api03-abcdefghijklmnop',
      'sk_live_4eC39HqLyjWDarjtT1zdp7dc',
      'ghp_0123456789abcdefghijABCDEFGHIJ',
      'AKIAIOSFODNN7EXAMPLE',
    ],
  },
  {
    detector: 'secret',
    options: { detectors: ['secret'] },
    samples: ['eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U', 'password=hunter2hunter2'],
  },
  {
    detector: 'your pattern',
    options: { detectors: [], patterns: [{ name: 'employee_id', pattern: /\bEMP-\d{6}\b/ }] },
    samples: ['EMP-204611'],
  },
]

/** The value with `char` inside it: after its first character, in its middle, before its last. */
const splitBy = (value: string, char: string) =>
  [1, value.length >> 1, value.length - 1].map((at) => `${value.slice(0, at)}${char}${value.slice(at)}`)

function stackOf(options: RedactOptions) {
  let value: unknown
  const lookup = defineTool({ name: 'lookup', description: 'Returns a value', input: z.object({}), effect: 'read', execute: () => value })
  const failing = defineTool({
    name: 'failing',
    description: 'Fails, quoting a value',
    input: z.object({}),
    effect: 'read',
    execute: () => {
      throw new ToolError('upstream_error', String(value))
    },
  })
  const stack = createStack({ tools: [lookup, failing], limits: { maxOutputChars: 1_000_000 }, middleware: [redact(options)] })
  return async (name: 'lookup' | 'failing', given: unknown) => {
    value = given
    return (await stack.dispatch({ id: 'c', name, args: {} })).content
  }
}

/** Whether every sample of `row`, split by every character of `chars`, reads as the sample does whole, and whole it is caught. */
async function caught(row: Row, chars: readonly string[]): Promise<boolean> {
  const read = stackOf(row.options)
  for (const sample of row.samples) {
    const whole = await read('lookup', [sample])
    if (whole.includes(sample)) return false
    const split = chars.flatMap((char) => splitBy(sample, char))
    if ((await read('lookup', split)) !== JSON.stringify(split.map(() => JSON.parse(whole)[0]))) return false
    // An error's message is capped, so errors take the class's first and last characters.
    const few = [chars[0] as string, chars[chars.length - 1] as string].flatMap((char) => splitBy(sample, char))
    const wholeError = await read('failing', few.map(() => sample).join(' | '))
    if ((await read('failing', few.join(' | '))) !== wholeError) return false
  }
  return true
}

async function table(): Promise<string> {
  const head = `| detector | samples | ${CLASSES.map((c) => `${c.name} (${CLASS_RANGES[c.name]})`).join(' | ')} |`
  const rule = `|${'---|'.repeat(CLASSES.length + 2)}`
  const lines = [head, rule]
  for (const row of ROWS) {
    const cells: string[] = []
    for (const c of CLASSES) cells.push((await caught(row, c.chars)) ? 'caught' : '**missed**')
    lines.push(`| \`${row.detector}\` | ${row.samples.map((s) => `\`${s}\``).join(', ')} | ${cells.join(' | ')} |`)
  }
  return lines.join('\n')
}

describe('redact: invisible characters inside a value', () => {
  it('the classes are exactly what core strips from the text the model reads', () => {
    const strip = createSanitizer()
    const stripped: string[] = []
    for (let cp = 0; cp <= 0x10ffff; cp++) {
      if (cp >= 0xd800 && cp <= 0xdfff) continue
      const char = String.fromCodePoint(cp)
      if (strip.output(`a${char}b`, Number.POSITIVE_INFINITY, false) === 'ab') stripped.push(char)
    }
    expect(stripped.sort()).toEqual(CLASSES.flatMap((c) => c.chars).sort())
  })

  it('every detector catches a value split by any of them, in results and errors, as the README table says', async () => {
    const generated = await table()
    expect(generated).not.toContain('missed')
    expect(readFileSync(new URL('../README.md', import.meta.url), 'utf8')).toContain(generated)
  })
})
