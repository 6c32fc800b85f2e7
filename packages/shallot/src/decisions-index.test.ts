import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

// docs/decisions/README.md is how a newcomer finds the contracts: twenty to start with, every record by number,
// and the measurement diaries that moved to docs/benchmarks.md's History. docs.test.ts checks the links of
// docs/*.md only; this checks the decisions folder, whose links and numbers nothing else reads.

const ROOT = resolve(fileURLToPath(new URL('../../..', import.meta.url)))
const DIR = join(ROOT, 'docs', 'decisions')
const index = readFileSync(join(DIR, 'README.md'), 'utf8')
const records = readdirSync(DIR)
  .filter((name) => /^\d{3}-.*\.md$/.test(name))
  .sort()
const history = readFileSync(join(ROOT, 'docs', 'benchmarks.md'), 'utf8')

/** The part of the index under `heading`, up to the next `## `. */
function part(heading: string): string {
  const from = index.indexOf(`## ${heading}\n`)
  expect(from, `docs/decisions/README.md has a "## ${heading}" section`).toBeGreaterThanOrEqual(0)
  const to = index.indexOf('\n## ', from + 3)
  return index.slice(from, to < 0 ? undefined : to)
}

describe('docs/decisions', () => {
  it('"Start here" lists twenty records, each once, in a numbered reading order', () => {
    const entries = [...part('Start here').matchAll(/^(\d+)\. \[(\d{3})\]\((\d{3}-[^)]+\.md)\): \S/gm)]
    expect(entries.map((e) => Number(e[1]))).toEqual(Array.from({ length: 20 }, (_, i) => i + 1))
    expect(new Set(entries.map((e) => e[3])).size).toBe(20)
    for (const [, , number, file] of entries) {
      expect(records, `${file} exists`).toContain(file)
      expect(file?.startsWith(`${number}-`), `${file} is linked as ${number}`).toBe(true)
    }
  })

  it('"All records, by number" links every record, in order, and nothing that is not one', () => {
    const linked = [...part('All records, by number').matchAll(/^- \[(\d{3})\]\((\d{3}-[^)]+\.md)\) \S/gm)].map((m) => m[2])
    expect(linked).toEqual(records)
  })

  it('each record is headed by its own number', () => {
    const wrong = records.filter((file) => !readFileSync(join(DIR, file), 'utf8').startsWith(`# ${file.slice(0, 3)} `))
    expect(wrong).toEqual([])
  })

  it('every diary moved to the benchmark history has its subsection there, and no record file left behind', () => {
    const moved = [...part('Moved to the benchmark history').matchAll(/^- \[(\d{3})\]\(\.\.\/benchmarks\.md#decision-(\d{3})\)/gm)]
    expect(moved.length).toBeGreaterThanOrEqual(15)
    for (const [, number, anchor] of moved) {
      expect(anchor).toBe(number)
      expect(history, `docs/benchmarks.md has #decision-${number}`).toContain(`<a id="decision-${number}"></a>`)
      expect(records.filter((file) => file.startsWith(`${number}-`))).toEqual([])
    }
    const start = history.indexOf('\n## History\n')
    expect(start).toBeGreaterThan(0)
    expect(history.indexOf('<!-- history:end -->')).toBeGreaterThan(start)
  })

  it('every relative link in the records and the index points at a file that exists, and at an anchor the history has', () => {
    const broken: string[] = []
    for (const file of [...records, 'README.md']) {
      const text = readFileSync(join(DIR, file), 'utf8').replace(/```[\s\S]*?```/g, '')
      for (const match of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const [target = '', anchor] = (match[1] as string).split('#')
        if (/^[a-z]+:/i.test(target)) continue
        const path = target === '' ? join(DIR, file) : resolve(dirname(join(DIR, file)), target)
        if (!existsSync(path)) broken.push(`${file}: ${match[1]}`)
        else if (anchor?.startsWith('decision-') && !readFileSync(path, 'utf8').includes(`<a id="${anchor}"></a>`))
          broken.push(`${file}: ${match[1]} (no such anchor)`)
      }
    }
    expect(broken).toEqual([])
  })
})
