import { createHmac } from 'node:crypto'
import { createSanitizer } from '@shallot/core/kit'
import type { Detector } from './detectors.js'

/** What happens to a value a detector found. */
export type Strategy = 'redact' | 'mask' | 'hash' | 'block'

/** A detector with the strategy it applies. */
export interface Rule {
  readonly detector: Detector
  readonly strategy: Strategy
  /** A user's pattern: it runs on every string, short ones included. */
  readonly own?: boolean
}

/**
 * Text no built-in detector can match: under 13 characters of letters, digits, `_` and spaces. An
 * e-mail needs `@`, an IP `.` or `:`, a card 13 digits, an IBAN 15 characters, a key 14, and every core
 * secret pattern punctuation or 16 characters: keys and short values skip all but the user's patterns.
 */
const PLAIN_SHORT = /^[\w ]{0,12}$/

/** What a scan found: counts by detector, and the detectors whose strategy is `block`. */
export class Findings {
  readonly counts = new Map<string, number>()
  readonly blocking = new Set<string>()

  add(name: string, strategy: Strategy): void {
    this.counts.set(name, (this.counts.get(name) ?? 0) + 1)
    if (strategy === 'block') this.blocking.add(name)
  }

  get empty(): boolean {
    return this.counts.size === 0
  }
}

interface Span {
  start: number
  end: number
  rule: Rule
}

/** Compiles the rules once into a function that rewrites one text, noting what it found. */
export function textScanner(rules: readonly Rule[], secret: Strategy | undefined, hashKey: string) {
  // Core's sanitizer, without secrets of its own: it strips what the model never sees, and redacts core's secret shapes.
  const core = createSanitizer()
  const hashOf = (name: string, value: string) =>
    `[${name}:${createHmac('sha256', hashKey).update(name).update('\0').update(value).digest('hex').slice(0, 16)}]`

  const own = rules.filter((rule) => rule.own === true)

  function spansOf(text: string, plain: boolean): Span[] {
    const spans: Span[] = []
    for (const rule of plain ? own : rules) {
      const pattern = rule.detector.pattern
      pattern.lastIndex = 0
      for (let match = pattern.exec(text); match !== null; match = pattern.exec(text)) {
        const start = match.index
        const length = match[0].length === 0 ? 0 : rule.detector.accept(match[0])
        if (length > 0) {
          spans.push({ start, end: start + length, rule })
          pattern.lastIndex = start + length
        } else {
          // The next candidate may start inside this one (a shorter card, an IBAN after a rejected one).
          pattern.lastIndex = start + 1
        }
      }
    }
    return spans
  }

  function replacement(rule: Rule, value: string): string {
    const { name } = rule.detector
    switch (rule.strategy) {
      case 'mask':
        return rule.detector.mask(value)
      case 'hash':
        return hashOf(name, value)
      default:
        return `[redacted:${name}]`
    }
  }

  /**
   * The text as the model will read it (invisible and bidi characters stripped, as the stack strips
   * them), with every value found replaced by its rule's strategy (a `block` value is redacted too).
   * Detectors run on that one text, never on the raw one: a card split by a zero-width space is
   * found whole, and cannot be joined after the check.
   */
  return function scan(raw: string, findings: Findings): string {
    const text = core.output(raw, Number.POSITIVE_INFINITY, false)
    let out = text
    const plain = PLAIN_SHORT.test(text)
    const spans = spansOf(text, plain)
    if (spans.length > 0) {
      spans.sort((a, b) => a.start - b.start || b.end - a.end)
      const parts: string[] = []
      let at = 0
      for (const span of spans) {
        if (span.start < at) continue
        parts.push(text.slice(at, span.start), replacement(span.rule, text.slice(span.start, span.end)))
        findings.add(span.rule.detector.name, span.rule.strategy)
        at = span.end
      }
      parts.push(text.slice(at))
      out = parts.join('')
    }
    if (secret !== undefined && !plain) {
      // Core's secret patterns last, over what is left: a JWT, a bearer token, `password=`, a private key, ...
      const redacted = core.output(out, Number.POSITIVE_INFINITY, true)
      if (redacted !== out) {
        findings.add('secret', secret)
        return redacted
      }
    }
    return out
  }
}
