import { maskVarying } from './normalize-message.js'

/** How much raw text is looked at, per compared text, before invisible characters are removed: bounds the work on huge replies. */
const RAW_FACTOR = 4

// Format characters (zero-width spaces and joiners, bidi controls, soft hyphens, tag characters, BOM)
// and combining marks (after decomposition) vanish; control characters separate words, as whitespace does.
const INVISIBLE = /[\p{Cf}\p{M}]/gu
const CONTROL = /\p{Cc}/gu
const WORDS = /[^\p{L}\p{N}<>]+/u
const ID = /<uuid>|<hex>/g

/**
 * The text as the comparison sees it: at most `maxChars` characters after decomposing, removing
 * invisible characters and diacritics, recomposing (NFKC folds full-width and other compatibility
 * forms), lowercasing, and replacing numbers, dates and times, and ids (UUIDs, hex) with placeholders.
 *
 * @example
 * normalizeText('Checking  status at 10:42 (attempt 3)\u200b', 2000) // 'checking status at <time> (attempt <n>)'
 */
export function normalizeText(text: string, maxChars: number): string {
  const visible = text
    .slice(0, maxChars * RAW_FACTOR)
    .normalize('NFKD')
    .replace(INVISIBLE, '')
    .replace(CONTROL, ' ')
    .normalize('NFKC')
  // Whether a reply names a UUID or a hex id says nothing about the plan: both are an id.
  return maskVarying(visible.slice(0, maxChars).toLowerCase()).replace(ID, '<id>')
}

// FNV-1a, 32 bits: shingles are kept as numbers so a run's state stays small JSON.
function hash(text: string): number {
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  return h >>> 0
}

/**
 * The set a text is compared by: its words and pairs of adjacent words (so word order counts a
 * little), each hashed, sorted, without repeats. The text is normalized by {@link normalizeText} first.
 *
 * @example
 * shingles('Checking the status again', 2000).length // 7: 4 words and 3 pairs
 */
export function shingles(text: string, maxChars: number): number[] {
  const words = normalizeText(text, maxChars)
    .split(WORDS)
    .filter((w) => w !== '')
  const set = new Set<number>()
  for (let i = 0; i < words.length; i++) {
    set.add(hash(words[i] as string))
    if (i > 0) set.add(hash(`${words[i - 1]} ${words[i]}`))
  }
  return [...set].sort((a, b) => a - b)
}

/**
 * Jaccard similarity of two sorted shingle sets: shared / all, from 0 (nothing shared) to 1
 * (the same set). Two empty texts are the same text.
 *
 * @example
 * jaccard([1, 2, 3], [2, 3, 4]) // 0.5
 */
export function jaccard(a: readonly number[], b: readonly number[]): number {
  if (a.length === 0 && b.length === 0) return 1
  let i = 0
  let j = 0
  let shared = 0
  while (i < a.length && j < b.length) {
    const x = a[i] as number
    const y = b[j] as number
    if (x === y) {
      shared++
      i++
      j++
    } else if (x < y) i++
    else j++
  }
  return shared / (a.length + b.length - shared)
}
