/** The longest server-supplied pattern kept. */
const MAX_SOURCE = 512
/** How many ways the bounded optional parts (`?`, `{2,5}`) of a kept pattern may combine. */
const MAX_BRANCHES = 256

interface Scan {
  unbounded: number
  branches: number
}

/** Reads a `{n}`, `{n,}` or `{n,m}` at `at`; `undefined` when the brace is a literal. */
function braces(source: string, at: number): { end: number; min: number; max: number } | undefined {
  const match = /^\{(\d{1,4})(,(\d{0,4}))?\}/.exec(source.slice(at, at + 12))
  if (match === null) return undefined
  const min = Number(match[1])
  const max = match[2] === undefined ? min : match[3] === '' ? Number.POSITIVE_INFINITY : Number(match[3])
  return { end: at + match[0].length, min, max }
}

/** Reads a quantifier at `at` (after an atom), counts it, and returns where the pattern goes on. */
function quantifier(source: string, at: number, scan: Scan): number {
  const char = source[at]
  let end = at
  let min = 1
  let max = 1
  if (char === '*' || char === '+' || char === '?') {
    end = at + 1
    min = char === '+' ? 1 : 0
    max = char === '?' ? 1 : Number.POSITIVE_INFINITY
  } else if (char === '{') {
    const read = braces(source, at)
    if (read === undefined) return at
    ;({ end, min, max } = read)
  } else {
    return at
  }
  if (max === Number.POSITIVE_INFINITY) scan.unbounded++
  else scan.branches *= max - min + 1
  return source[end] === '?' ? end + 1 : end // a lazy quantifier costs the same
}

/** The end of the character class opening at `at` (the index after its `]`), or -1 when it never closes. */
function classEnd(source: string, at: number): number {
  for (let i = at + 1; i < source.length; i++) {
    if (source[i] === '\\') i++
    else if (source[i] === ']' && i > at + 1) return i + 1
  }
  return -1
}

/**
 * Whether a regular expression from an untrusted schema runs in linear time in JavaScript's backtracking
 * engine, by a conservative reading of its source: anchored at the start (`^`), no alternation
 * outside a group, no backreference or lookaround, no quantified group, at most one unbounded
 * quantifier (`*`, `+`, `{n,}`) and at most 256 combinations of bounded ones. `^[a-z0-9_]+$` and
 * `^ORD-\d{4}-\d{5}$` pass; `^(a+)+$`, `(a|a)*`, `a+b` (unanchored: quadratic) and
 * `^[a-z]+-[0-9]+$` (two unbounded) do not. A pattern that fails is not run; the server, which
 * wrote it, still validates.
 *
 * @example
 * isLinearPattern('^[A-Z]{3}-\\d+$') // true
 * isLinearPattern('^(a+)+$') // false
 */
export function isLinearPattern(source: string): boolean {
  if (source.length > MAX_SOURCE || !source.startsWith('^')) return false
  const scan: Scan = { unbounded: 0, branches: 1 }
  let depth = 0
  let i = 1
  while (i < source.length) {
    const char = source[i] as string
    let next = i + 1
    if (char === '\\') {
      const escaped = source[i + 1] ?? ''
      if (/[1-9k]/.test(escaped)) return false // a backreference
      next = i + 2
    } else if (char === '[') {
      next = classEnd(source, i)
      if (next < 0) return false
    } else if (char === '(') {
      if (/^\(\?(?:[=!]|<[=!])/.test(source.slice(i, i + 4))) return false // a lookaround
      depth++
      // Past `(?:` or `(?<name>`, so the `?` is not read as a quantifier.
      i = source[next] === '?' ? (/^\?(?::|<[A-Za-z_$][\w$]*>)/.exec(source.slice(next, next + 40))?.[0].length ?? 0) + next : next
      continue
    } else if (char === ')') {
      depth--
      if (depth < 0 || quantifier(source, next, scan) !== next) return false // a quantified group
      i = next
      continue
    } else if (char === '|') {
      if (depth === 0) return false // the other branch is not anchored
      i = next
      continue
    } else if (char === '^' || char === '$') {
      i = next
      continue
    } else if (char === '*' || char === '+' || char === '?') {
      return false // a quantifier with nothing to repeat, or a second one in a row
    }
    i = quantifier(source, next, scan)
    if (scan.unbounded > 1 || scan.branches > MAX_BRANCHES) return false
  }
  return depth === 0
}
