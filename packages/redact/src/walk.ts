import type { Findings } from './scan.js'

/** What stands in for a part of a result the walk will not read: deeper than `maxNesting`, or a cycle. */
export const TOO_DEEP = '[redacted: nested too deep]'
export const CIRCULAR = '[circular]'

/** The walk could not read the result (a getter or `toJSON` threw, or it holds more text than allowed): it is withheld. */
export class Unreadable extends Error {
  constructor(readonly why: 'unreadable' | 'too_large') {
    super(why)
  }
}

export interface WalkLimits {
  readonly maxNesting: number
  readonly maxChars: number
}

/** Digits a number or bigint must have before the card detector reads it: shorter ones cannot be a card. */
const MIN_CARD_DIGITS = 13

function define(target: Record<string, unknown>, key: string, value: unknown): void {
  // Defined, not assigned: a `__proto__` key in a tool's output stays an own data key and changes no prototype.
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true })
}

/**
 * Rewrites a tool's value the way the model will read it (`JSON.stringify`'s view: `toJSON` applied,
 * own enumerable keys, boxed primitives unwrapped): every string and every object key through `scan`,
 * integers long enough to be card numbers too. Returns a new value built of plain objects and arrays;
 * `__proto__` keys stay own keys, a cycle becomes `[circular]`, anything deeper than `maxNesting`
 * `[redacted: nested too deep]`.
 */
export function walkValue(
  value: unknown,
  scan: (text: string, findings: Findings) => string,
  findings: Findings,
  limits: WalkLimits,
  build = true,
): unknown {
  const ancestors = new Set<object>()
  let chars = 0

  function text(s: string): string {
    chars += s.length
    if (chars > limits.maxChars) throw new Unreadable('too_large')
    return scan(s, findings)
  }

  function visit(input: unknown, key: string | number, depth: number): unknown {
    let item = input
    if (item !== null && (typeof item === 'object' || typeof item === 'bigint')) {
      const toJSON = (item as { toJSON?: unknown }).toJSON
      if (typeof toJSON === 'function') item = toJSON.call(item, String(key))
    }
    switch (typeof item) {
      case 'string':
        return text(item)
      case 'number':
      case 'bigint': {
        const digits = String(item)
        if (digits.length < MIN_CARD_DIGITS) return item
        const scanned = text(digits)
        return scanned === digits ? item : scanned
      }
      case 'object':
        break
      default:
        return item
    }
    if (item === null) return null
    if (item instanceof String || item instanceof Number || item instanceof Boolean || item instanceof BigInt) {
      return visit(item.valueOf(), key, depth)
    }
    if (depth >= limits.maxNesting) return TOO_DEEP
    if (ancestors.has(item)) return CIRCULAR
    ancestors.add(item)
    try {
      if (!build) {
        // Looking only: nothing is built, so a result with nothing to find costs no copy.
        if (Array.isArray(item)) for (let i = 0; i < item.length; i++) visit(item[i], i, depth + 1)
        else
          for (const name of Object.keys(item)) {
            text(name)
            visit((item as Record<string, unknown>)[name], name, depth + 1)
          }
        return item
      }
      if (Array.isArray(item)) {
        const out: unknown[] = new Array(item.length)
        for (let i = 0; i < item.length; i++) out[i] = visit(item[i], i, depth + 1)
        return out
      }
      const out: Record<string, unknown> = {}
      for (const name of Object.keys(item)) {
        const base = text(name)
        let cleanName = base
        // Two keys redacted alike stay two keys.
        for (let n = 2; Object.hasOwn(out, cleanName); n++) cleanName = `${base} (${n})`
        define(out, cleanName, visit((item as Record<string, unknown>)[name], name, depth + 1))
      }
      return out
    } finally {
      ancestors.delete(item)
    }
  }

  try {
    return visit(value, '', 0)
  } catch (err) {
    if (err instanceof Unreadable) throw err
    throw new Unreadable('unreadable')
  }
}
