import type { Detector } from './detectors.js'

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')

/**
 * Why a pattern may backtrack catastrophically, or `undefined`. Refused: a quantified group that
 * holds a quantifier (`(a+)+`, `(\w*\s?)*`, `(?:x{2,})+`: star height above one, the shape of
 * every classic ReDoS), and backreferences. This is a shape check, not a proof: overlapping
 * alternatives under one quantifier (`(a|ab)*`) still pass it, so keep patterns simple.
 */
export function backtrackingProblem(source: string): string | undefined {
  if (/\\[1-9]|\\k</.test(source)) return 'uses a backreference, which can make matching take exponential time'
  // One entry per open group: whether a quantifier was seen inside it.
  const groups: boolean[] = []
  let inClass = false
  let lastClosedHadQuantifier = false
  for (let i = 0; i < source.length; i++) {
    const c = source[i] as string
    if (c === '\\') {
      i++
      lastClosedHadQuantifier = false
      continue
    }
    if (inClass) {
      if (c === ']') inClass = false
      continue
    }
    if (c === '[') {
      inClass = true
      lastClosedHadQuantifier = false
    } else if (c === '(') {
      groups.push(false)
    } else if (c === ')') {
      lastClosedHadQuantifier = groups.pop() ?? false
      if (lastClosedHadQuantifier && groups.length > 0) groups[groups.length - 1] = true
      continue
    } else if (c === '*' || c === '+' || c === '{' || c === '?') {
      const unbounded = c === '*' || c === '+' || (c === '{' && /^\{\d*,\d*\}/.test(source.slice(i)) && !/^\{\d+\}/.test(source.slice(i)))
      if (unbounded && lastClosedHadQuantifier) {
        return 'repeats a group that itself repeats (like (a+)+), which can make matching take exponential time'
      }
      if (unbounded && groups.length > 0) groups[groups.length - 1] = true
    }
    lastClosedHadQuantifier = false
  }
  return undefined
}

/** A user's pattern as a detector: a RegExp with `g` (a sticky flag dropped), or a literal string matched exactly. */
export function userDetector(name: string, pattern: RegExp | string): Detector {
  const compiled =
    typeof pattern === 'string'
      ? new RegExp(escapeRegExp(pattern), 'g')
      : new RegExp(
          pattern.source,
          pattern.flags.replace('y', '').includes('g') ? pattern.flags.replace('y', '') : `${pattern.flags.replace('y', '')}g`,
        )
  return {
    name,
    pattern: compiled,
    accept: (candidate) => candidate.length,
    mask: (value) => '*'.repeat(Math.min(value.length, 32)),
  }
}
