import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join, posix, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

// What a stranger gets from the registry: every published manifest and README as it ships.

const ROOT = resolve(fileURLToPath(new URL('../../..', import.meta.url)))
const REPOSITORY = 'https://github.com/shallot-dev/shallot'

interface Manifest {
  name: string
  private?: boolean
  license?: string
  author?: string
  homepage?: string
  bugs?: { url?: string }
  repository?: { type?: string; url?: string; directory?: string }
  keywords?: string[]
  engines?: { node?: string }
  exports?: Record<string, unknown>
  publishConfig?: { exports?: Record<string, unknown>; access?: string }
  files?: string[]
}

const published = readdirSync(join(ROOT, 'packages'))
  .filter((name) => existsSync(join(ROOT, 'packages', name, 'package.json')))
  .map((name) => ({
    dir: `packages/${name}`,
    manifest: JSON.parse(readFileSync(join(ROOT, 'packages', name, 'package.json'), 'utf8')) as Manifest,
  }))
  .filter(({ manifest }) => manifest.private !== true)

/** Every link target of a markdown text: inline `[text](target)` and reference `[id]: target`. */
function links(markdown: string): string[] {
  const out: string[] = []
  for (const match of markdown.matchAll(/\]\(([^)\s]+)\)|^\[[^\]]+\]:\s*(\S+)/gm)) out.push((match[1] ?? match[2]) as string)
  return out
}

/** Relative targets that resolve outside `dir`: dead on the registry's page, where only the package is. */
function leaving(markdown: string, dir: string): string[] {
  return links(markdown).filter((link) => {
    if (/^[a-z][a-z0-9+.-]*:/i.test(link) || link.startsWith('#') || link.startsWith('/')) return false
    const target = posix.normalize(posix.join(dir, link.split('#')[0] as string))
    return target !== dir && !target.startsWith(`${dir}/`)
  })
}

function withoutCondition(value: unknown, condition: string): unknown {
  if (typeof value !== 'object' || value === null) return value
  return Object.fromEntries(
    Object.entries(value)
      .filter(([key]) => key !== condition)
      .map(([key, v]) => [key, withoutCondition(v, condition)]),
  )
}

describe('published packages', () => {
  it('are every folder of packages/', () => {
    const folders = readdirSync(join(ROOT, 'packages')).filter((name) => existsSync(join(ROOT, 'packages', name, 'package.json')))
    expect(published.map((p) => p.dir)).toEqual(folders.map((name) => `packages/${name}`))
    expect(published.length).toBeGreaterThanOrEqual(17)
  })

  it.each(published)('$dir: README links never leave the package', ({ dir }) => {
    const readme = readFileSync(join(ROOT, dir, 'README.md'), 'utf8')
    expect(leaving(readme, dir)).toEqual([])
  })

  it('finds a relative link that leaves the package, and leaves links inside it and absolute ones alone', () => {
    const markdown = [
      '[onion](../../docs/onion.md) [core](../core) [ref]: ../../README.md',
      '[here](./src/index.ts) [anchor](#options) [abs](https://example.com/x) [mail](mailto:a@b.c)',
      '[sneaky](src/../../retry/README.md)',
    ].join('\n')
    expect(leaving(markdown, 'packages/timeout')).toEqual(['../../docs/onion.md', '../core', 'src/../../retry/README.md'])
  })

  it.each(published)('$dir: LICENSE, repository, homepage, bugs, author, keywords, engines', ({ dir, manifest }) => {
    expect(readFileSync(join(ROOT, dir, 'LICENSE'), 'utf8')).toBe(readFileSync(join(ROOT, 'LICENSE'), 'utf8'))
    expect(manifest.files).toContain('LICENSE')
    expect(manifest.license).toBe('MIT')
    expect(manifest.author).toEqual(expect.any(String))
    expect(manifest.repository).toEqual({ type: 'git', url: `git+${REPOSITORY}.git`, directory: dir })
    expect(manifest.homepage).toBe(`${REPOSITORY}/tree/main/${dir}#readme`)
    expect(manifest.bugs).toEqual({ url: `${REPOSITORY}/issues` })
    expect(manifest.keywords).toEqual(expect.arrayContaining(['shallot', 'llm', 'agent']))
    expect(manifest.engines).toEqual({ node: '>=20.19' })
  })

  it.each(published)('$dir: ships exports without the workspace-only condition, and ./package.json', ({ manifest }) => {
    expect(manifest.exports?.['./package.json']).toBe('./package.json')
    expect(manifest.publishConfig?.exports).toEqual(withoutCondition(manifest.exports, 'shallot-source'))
    expect(JSON.stringify(manifest.publishConfig?.exports)).not.toContain('shallot-source')
    expect(manifest.files).not.toContain('scripts')
    expect(manifest.files).toContain('!dist/.tsbuildinfo')
    if (manifest.name.startsWith('@')) expect(manifest.publishConfig?.access).toBe('public')
  })

  it('every workspace manifest, the root included, says Node >=20.19', () => {
    const dirs = [
      '.',
      'bench',
      ...['packages', 'examples'].flatMap((group) => readdirSync(join(ROOT, group)).map((name) => `${group}/${name}`)),
    ]
    for (const dir of dirs) {
      const path = join(ROOT, dir, 'package.json')
      if (existsSync(path)) expect([dir, (JSON.parse(readFileSync(path, 'utf8')) as Manifest).engines?.node]).toEqual([dir, '>=20.19'])
    }
  })

  it('are what .ci/stamp-manifests.mjs writes: nothing has drifted from the one place that names the repository', () => {
    const result = spawnSync(process.execPath, [join(ROOT, '.ci', 'stamp-manifests.mjs'), '--check'], { encoding: 'utf8' })
    expect(result.stderr).toBe('')
    expect(result.status).toBe(0)
  })
})

describe('ESM, and require() on Node >= 20.19', () => {
  it('every package loads with require() from CommonJS, with the same exports as import', { timeout: 120_000 }, () => {
    // One CommonJS process requires each package by name (self-reference resolves through its own exports, to
    // dist/, as a consumer's require would), then imports it, and compares the export names.
    const script = `
      const { createRequire } = require('node:module')
      const out = {}
      ;(async () => {
        for (const [name, dir] of JSON.parse(process.argv[1])) {
          const required = createRequire(dir + '/package.json')(name)
          const imported = await import(createRequire(dir + '/package.json').resolve(name))
          out[name] = { required: Object.keys(required).sort(), imported: Object.keys(imported).sort() }
        }
        process.stdout.write(JSON.stringify({ node: process.version, out }))
      })().catch((err) => { console.error(err); process.exit(1) })
    `
    const pairs = published.map(({ dir, manifest }) => [manifest.name, join(ROOT, dir)])
    const stdout = execFileSync(process.execPath, ['--no-warnings', '-e', script, JSON.stringify(pairs)], { encoding: 'utf8' })
    const { node, out } = JSON.parse(stdout) as { node: string; out: Record<string, { required: string[]; imported: string[] }> }
    const [major, minor] = node.slice(1).split('.').map(Number) as [number, number]
    expect(major > 20 || (major === 20 && minor >= 19)).toBe(true)
    expect(Object.keys(out)).toHaveLength(published.length)
    for (const [name, { required, imported }] of Object.entries(out)) {
      expect([name, required.length > 0]).toEqual([name, true])
      // require(esm) returns the module namespace; only the __esModule interop marker may differ.
      expect([name, required.filter((key) => key !== '__esModule')]).toEqual([name, imported])
    }
    expect(out.shallot?.required).toContain('defaultMiddleware')
  })

  it('every package is "type": "module" with an ESM-only exports map', () => {
    for (const { manifest, dir } of published) {
      const raw = JSON.parse(readFileSync(join(ROOT, dir, 'package.json'), 'utf8')) as { type?: string }
      expect([manifest.name, raw.type]).toEqual([manifest.name, 'module'])
      expect(JSON.stringify(manifest.publishConfig?.exports)).not.toMatch(/"require"/)
    }
  })
})
