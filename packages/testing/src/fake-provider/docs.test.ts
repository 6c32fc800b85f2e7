import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { waitOutRateLimit } from './docs-example.js'
import { explainMain } from './readme-example.js'

const read = (file: string) => readFileSync(new URL(file, import.meta.url), 'utf8')
const published = (file: string) => read(file).replace("from '../index.js'", "from '@shallot/testing'")

describe('docs/testing.md: testing against a fake provider', () => {
  it('shows the example verbatim (importing the published name)', () => {
    expect(read('../../../../docs/testing.md')).toContain(published('./docs-example.ts'))
  })

  it('runs: the re-send arrives two virtual seconds after the 429', async () => {
    await expect(waitOutRateLimit()).resolves.toEqual({ status: 429, text: 'Hello!', arrivals: [0, 2_000] })
  })
})

describe('README: fakeProvider with the real Anthropic provider', () => {
  it('shows the example verbatim (importing the published name)', () => {
    expect(read('../../README.md')).toContain(published('./readme-example.ts'))
  })

  it('runs: the second request carries the tool result, and the answer quotes it', async () => {
    const { text, sent } = await explainMain()
    expect(text).toBe('main.rs holds fn main() {}')
    expect(sent).toEqual([[], [{ id: 'toolu_0_0', content: 'fn main() {}' }]])
  })
})
