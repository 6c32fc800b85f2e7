import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

// The front page is what a newcomer reads first: it says what shallot is and that it is not on npm yet, defines its
// words before it uses them, speaks no internal history, and keeps the two commands CI and the Quick start share.

const readme = readFileSync(fileURLToPath(new URL('../../../README.md', import.meta.url)), 'utf8')
const prose = readme.replace(/```[\s\S]*?```/g, '')
const glossaryStart = prose.indexOf('## Words this page uses')
const glossaryEnd = prose.indexOf('\n## ', glossaryStart + 4)

describe('README.md, the front page', () => {
  it('names no internal issue or decision by number', () => {
    expect(readme.match(/\b(issue|decision)s? #?\d+/gi) ?? []).toEqual([])
  })

  it('says plainly that nothing is on npm yet, before its first npm install', () => {
    const notYet = readme.indexOf('**Not on npm yet.**')
    expect(notYet).toBeGreaterThan(0)
    expect(notYet).toBeLessThan(readme.indexOf('npm install'))
  })

  it('keeps the Quick start commands CI runs, exactly', () => {
    expect(readme).toContain(
      'npx -y pnpm@12.4.2 install && npx -y pnpm@12.4.2 demo\nnpx -y pnpm@12.4.2 install && npx -y pnpm@12.4.2 test\n',
    )
  })

  it.each([
    ['soft error', /soft error/i],
    ['hard error', /hard error|LoopError/],
    ['turn', /\bturns?\b/],
    ['step', /\bsteps?\b(?! per run)/],
    ['idempotency key', /idempotency key|idempotencyKey/i],
    ['reconcile', /reconcile/],
    ['safeToRepeat', /safeToRepeat/],
    ['parking', /\bpark/i],
  ])('defines "%s" before the page uses it', (_term, pattern) => {
    expect(glossaryStart).toBeGreaterThan(0)
    const first = prose.search(pattern)
    expect(first).toBeGreaterThan(glossaryStart)
    expect(prose.slice(glossaryStart, glossaryEnd)).toMatch(pattern)
  })

  it('keeps the benchmark tables in docs/benchmarks.md and links them', () => {
    expect(readme).not.toContain('<!-- bench-agents:start -->')
    expect(readme).toContain('](docs/benchmarks.md)')
  })
})
