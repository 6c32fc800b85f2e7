import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

// docs/topics/ holds the contracts in force, one page per area, and docs/topics/README.md is how a newcomer finds
// them. This checks that the index lists every page once, that links into the pages land on a heading they have, and
// that no page a reader meets still points at the decision records or issue numbers the pages replaced.

const ROOT = resolve(fileURLToPath(new URL('../../..', import.meta.url)))
const DIR = join(ROOT, 'docs', 'topics')
const index = readFileSync(join(DIR, 'README.md'), 'utf8')
const pages = readdirSync(DIR)
  .filter((name) => name.endsWith('.md') && name !== 'README.md')
  .sort()

/** Markdown a reader meets: the root README, everything under docs/, and every package's, example's and bench's README. */
function readerFiles(): string[] {
  const files = ['README.md']
  const walk = (dir: string): void => {
    for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
      const path = `${dir}/${entry.name}`
      if (entry.isDirectory()) walk(path)
      else if (entry.name.endsWith('.md')) files.push(path)
    }
  }
  walk('docs')
  for (const group of ['packages', 'examples', 'bench']) {
    const dir = join(ROOT, group)
    if (!existsSync(dir)) continue
    if (existsSync(join(dir, 'README.md'))) files.push(`${group}/README.md`)
    for (const name of readdirSync(dir).sort()) if (existsSync(join(dir, name, 'README.md'))) files.push(`${group}/${name}/README.md`)
  }
  return files
}

/** GitHub's anchor for a heading: lowercased, punctuation dropped, spaces as hyphens. */
function slugOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-')
}

/** The anchors of a markdown text's headings, outside code blocks. */
function anchorsOf(markdown: string): Set<string> {
  const text = markdown.replace(/```[\s\S]*?```/g, '')
  return new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map((m) => slugOf(m[1] as string)))
}

const prose = (file: string) => readFileSync(join(ROOT, file), 'utf8').replace(/```[\s\S]*?```/g, '')

describe('docs/topics', () => {
  it('the index lists every topic page once, numbered in reading order, and nothing that is not one', () => {
    const entries = [...index.matchAll(/^(\d+)\. \[([\w-]+\.md)\]\(([\w-]+\.md)\): \S/gm)]
    expect(entries.map((e) => Number(e[1]))).toEqual(Array.from({ length: entries.length }, (_, i) => i + 1))
    for (const [, , text, target] of entries) expect(text).toBe(target)
    expect(entries.map((e) => e[3]).sort()).toEqual(pages)
    expect(pages.length).toBeGreaterThanOrEqual(10)
  })

  it('docs/README.md links the topics index', () => {
    expect(readFileSync(join(ROOT, 'docs', 'README.md'), 'utf8')).toContain('](topics/README.md)')
  })

  it('each page has one title and says what it pins before its first section', () => {
    for (const page of pages) {
      const text = readFileSync(join(DIR, page), 'utf8')
      expect(text.startsWith('# '), `${page} starts with its title`).toBe(true)
      expect([...prose(`docs/topics/${page}`).matchAll(/^# /gm)].length, `${page} has one title`).toBe(1)
      expect(text.indexOf('\n## ') > text.indexOf('\n\n'), `${page} has an opening paragraph`).toBe(true)
    }
  })

  it('every link into a topic page lands on a file that exists and on a heading it has', () => {
    const broken: string[] = []
    for (const file of readerFiles()) {
      for (const match of prose(file).matchAll(/\]\(([^)\s]+)\)/g)) {
        const [target = '', anchor] = (match[1] as string).split('#')
        if (/^[a-z]+:/i.test(target)) continue
        const path = target === '' ? join(ROOT, file) : resolve(dirname(join(ROOT, file)), target)
        if (!relative(DIR, path).startsWith('..') && path.endsWith('.md')) {
          if (!existsSync(path)) broken.push(`${file}: ${match[1]}`)
          else if (anchor !== undefined && !anchorsOf(readFileSync(path, 'utf8')).has(anchor))
            broken.push(`${file}: ${match[1]} (no such heading)`)
        }
      }
    }
    expect(broken).toEqual([])
  })

  it('no page a reader meets points at a decision record or an issue number', () => {
    const stale: string[] = []
    for (const file of readerFiles()) {
      const text = readFileSync(join(ROOT, file), 'utf8')
      for (const match of text.matchAll(/docs\/decisions|decisions\/|[Dd]ecisions? \d{3}|benchmarks\.md#decision-|[Ii]ssues? #?\d+/g))
        stale.push(`${file}: ${match[0]}`)
    }
    expect(stale).toEqual([])
  })
})
