import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { builtinMiddleware } from '@shallot/config'
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

describe('what the docs count and cite is what the repository has', () => {
  const root = (path: string) => readFileSync(fileURLToPath(new URL(`../../../${path}`, import.meta.url)), 'utf8')
  const names = builtinMiddleware.map((d) => d.name)
  const NUMBERS = [
    'zero',
    'one',
    'two',
    'three',
    'four',
    'five',
    'six',
    'seven',
    'eight',
    'nine',
    'ten',
    'eleven',
    'twelve',
    'thirteen',
    'fourteen',
  ]

  it("docs/config.md's stack bullet names every built-in, and config's README counts them", () => {
    const bullet = root('docs/config.md').split('- **`stack`**')[1]?.split('\n- ')[0] ?? ''
    for (const name of names) expect(bullet).toContain(`\`${name}\``)
    expect(root('packages/config/README.md')).toContain(`the ${NUMBERS[names.length]} built-in definitions`)
  })

  it('the README counts the layers shallot exports, and names the Node versions CI runs', async () => {
    const exported = Object.keys(await import('./index.js'))
    const layers = ['bulkhead', 'circuitBreaker', 'coalesce', 'contextEditing', 'errorClassifier', 'fallback', 'hedging']
      .concat(['idempotency', 'panicCatcher', 'rateLimit', 'redact', 'retry', 'stuckLoop', 'timeout'])
      .filter((name) => exported.includes(name))
    expect(readme).toContain(`all ${NUMBERS[layers.length]} layers`)
    expect(readme).toContain('CI tests Node 20 and 24')
    expect(root('.ci/run')).toContain('node24')
  })

  it('cites no DESIGN.md, which is not in the repository', () => {
    const pages = ['README.md', 'docs/config.md', 'docs/errors.md', 'packages/retry/README.md', 'packages/circuit-breaker/README.md']
    for (const page of pages.concat('packages/error-classifier/README.md')) expect(root(page)).not.toContain('DESIGN.md')
  })
})
