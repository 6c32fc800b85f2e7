import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

// The package tables of the root README and docs/README.md are where a newcomer learns what exists: each must list
// every published package of packages/, once, linked to its own folder.

const ROOT = resolve(fileURLToPath(new URL('../../..', import.meta.url)))

/** Every package of packages/: name → folder name. */
function packagesOnDisk(): Map<string, string> {
  const found = new Map<string, string>()
  for (const entry of readdirSync(join(ROOT, 'packages'), { withFileTypes: true })) {
    const manifest = join(ROOT, 'packages', entry.name, 'package.json')
    if (!entry.isDirectory() || !existsSync(manifest)) continue
    const { name, private: isPrivate } = JSON.parse(readFileSync(manifest, 'utf8')) as { name: string; private?: boolean }
    if (isPrivate !== true) found.set(name, entry.name)
  }
  return found
}

/** The `## Packages` section of a markdown file, up to the next `## ` heading. */
function packagesSection(markdown: string, doc: string): string {
  const start = markdown.search(/^## Packages\s*$/m)
  if (start < 0) throw new Error(`${doc} has no "## Packages" section`)
  const rest = markdown.slice(start + 1)
  const end = rest.search(/^## /m)
  return end < 0 ? rest : rest.slice(0, end)
}

/** Each package link of a table, `[\`name\`](prefix/folder)`, in order: [name, folder]. */
function packageLinks(section: string, prefix: string): Array<[string, string]> {
  const links: Array<[string, string]> = []
  const escaped = prefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  for (const match of section.matchAll(new RegExp(`\\[\`([^\`]+)\`\\]\\(${escaped}([^)#/]+)[^)]*\\)`, 'g'))) {
    links.push([match[1] as string, match[2] as string])
  }
  return links
}

/** What is wrong with a table against the packages on disk; empty when it tells the truth. */
function tableProblems(links: Array<[string, string]>, onDisk: Map<string, string>): string[] {
  const problems: string[] = []
  const counts = new Map<string, number>()
  for (const [name, folder] of links) {
    counts.set(name, (counts.get(name) ?? 0) + 1)
    const expected = onDisk.get(name)
    if (expected === undefined) problems.push(`lists ${name}, which is not a package of packages/`)
    else if (expected !== folder) problems.push(`links ${name} to ${folder}, its folder is packages/${expected}`)
  }
  for (const [name, count] of counts) if (count > 1) problems.push(`lists ${name} ${count} times`)
  for (const name of onDisk.keys()) if (!counts.has(name)) problems.push(`misses ${name}`)
  return problems
}

const TABLES = [
  { doc: 'README.md', prefix: 'packages/' },
  { doc: 'docs/README.md', prefix: '../packages/' },
] as const

describe('the package tables', () => {
  const onDisk = packagesOnDisk()

  it.each(TABLES)('$doc lists every package once, linked to its folder', ({ doc, prefix }) => {
    const section = packagesSection(readFileSync(join(ROOT, doc), 'utf8'), doc)
    expect(tableProblems(packageLinks(section, prefix), onDisk)).toEqual([])
  })

  it('names the cli package with its run command in both tables', () => {
    for (const { doc } of TABLES) {
      const section = packagesSection(readFileSync(join(ROOT, doc), 'utf8'), doc)
      const row = section.split('\n').find((line) => line.includes('[`@shallot/cli`]'))
      expect(row, doc).toContain('shallot run')
    }
  })

  it('reports a missing package, a duplicate, a stranger and a wrong folder', () => {
    const onDiskHere = new Map([
      ['@shallot/a', 'a'],
      ['@shallot/b', 'b'],
    ])
    const section =
      '| [`@shallot/a`](packages/a) | x |\n| [`@shallot/a`](packages/a) | y |\n| [`@shallot/z`](packages/z) |\n| [`@shallot/b`](packages/c) |'
    expect(tableProblems(packageLinks(section, 'packages/'), onDiskHere)).toEqual([
      'lists @shallot/z, which is not a package of packages/',
      'links @shallot/b to c, its folder is packages/b',
      'lists @shallot/a 2 times',
    ])
    expect(tableProblems(packageLinks('| [`@shallot/a`](packages/a) |', 'packages/'), onDiskHere)).toEqual(['misses @shallot/b'])
  })

  it('refuses a page without a Packages section rather than passing on nothing', () => {
    expect(() => packagesSection('# title\n\n## Other\n', 'x.md')).toThrow('x.md has no "## Packages" section')
  })
})
