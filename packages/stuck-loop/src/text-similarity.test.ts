import { describe, expect, it } from 'vitest'
import { jaccard, normalizeText, shingles } from './text-similarity.js'

describe('normalizeText', () => {
  it('folds what does not change the meaning of a reply', () => {
    expect(normalizeText('Checking  status at 10:42 (attempt 3)\u200b', 2000)).toBe('checking status at <time> (attempt <n>)')
    expect(normalizeText('Ｃａｆé\u0301 job 550e8400-e29b-41d4-a716-446655440000 or 0x1f', 2000)).toBe('cafe job <id> or <id>')
    expect(normalizeText('line one\u0000line\ttwo', 2000)).toBe('line one line two')
  })

  it('looks at no more than maxChars visible characters, within 4 × maxChars of raw text', () => {
    expect(normalizeText(`${'\u200b'.repeat(250)}${'a'.repeat(500)}`, 100)).toBe('a'.repeat(100))
    expect(normalizeText(`${'\u200b'.repeat(400)}${'a'.repeat(500)}`, 100)).toBe('')
    expect(normalizeText('x'.repeat(1_000_000), 50)).toHaveLength(50)
  })
})

describe('shingles and jaccard', () => {
  it('are words and adjacent word pairs, compared as shared over all', () => {
    expect(shingles('a b c', 100)).toHaveLength(5)
    expect(shingles('A  b, c!', 100)).toEqual(shingles('a b c', 100))
    expect(jaccard(shingles('a b c', 100), shingles('a b d', 100))).toBe(3 / 7)
    expect(jaccard([], [])).toBe(1)
    expect(jaccard([1], [])).toBe(0)
  })

  it('is symmetric, between 0 and 1, and 1 exactly for the same text', () => {
    const texts = ['', 'status', 'check the status again', 'again the status check', 'api worker 42 done', 'done done done']
    for (const a of texts) {
      for (const b of texts) {
        const j = jaccard(shingles(a, 500), shingles(b, 500))
        expect(j).toBe(jaccard(shingles(b, 500), shingles(a, 500)))
        expect(j).toBeGreaterThanOrEqual(0)
        expect(j).toBeLessThanOrEqual(a === b ? 1 : 0.999)
      }
      expect(jaccard(shingles(a, 500), shingles(a, 500))).toBe(1)
    }
  })
})
