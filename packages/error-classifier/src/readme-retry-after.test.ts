import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { pushbackOf } from './readme-retry-after-example.js'

const read = (file: string) => readFileSync(new URL(file, import.meta.url), 'utf8')

describe('README, Retry-After', () => {
  it('shows the type-checked example verbatim (importing the published name)', () => {
    const example = read('./readme-retry-after-example.ts').replace("from './index.js'", "from '@shallot/error-classifier'")
    expect(read('../README.md')).toContain(example)
  })

  it('runs: retry-after-ms wins, seconds are read, a response without pushback asks for none', () => {
    expect(pushbackOf({ headers: new Headers({ 'retry-after-ms': '1500', 'retry-after': '2' }) })).toBe(1500)
    expect(pushbackOf({ headers: new Headers({ 'Retry-After': '7' }) })).toBe(7000)
    expect(pushbackOf({ headers: new Headers({ 'retry-after': '3600' }) })).toBe(60_000)
    expect(pushbackOf({ headers: new Headers() })).toBeUndefined()
  })
})
