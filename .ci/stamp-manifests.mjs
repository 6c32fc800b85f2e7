#!/usr/bin/env node
// The one place that says where shallot lives and who publishes it. Every published package.json gets its
// repository, homepage, bugs, author, license, engines, LICENSE file, `./package.json` export and the
// `publishConfig.exports` that ships (the workspace-only "shallot-source" condition removed); every package
// README's links that leave the package become absolute links to the repository, since docs/ ships in no
// package and a relative link is dead on the registry's page.
//
//   node .ci/stamp-manifests.mjs           rewrite what drifted
//   node .ci/stamp-manifests.mjs --check   print what drifted and exit 1 (CI)
//
// To move the project: change REPOSITORY (and AUTHOR) below and run it once.
import { copyFileSync, existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { dirname, join, posix, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

export const REPOSITORY = 'https://github.com/shallot-dev/shallot'
export const BRANCH = 'main'
export const AUTHOR = 'The shallot maintainers'
export const NODE_ENGINES = '>=20.19'
const COMMON_KEYWORDS = ['shallot', 'llm', 'agent', 'ai-agent', 'tool-calling', 'middleware']

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..')

/** Every workspace folder with a package.json: `packages/*`, `examples/*`, `bench`. */
export function workspaceDirs() {
  const dirs = []
  for (const group of ['packages', 'examples']) {
    const base = join(ROOT, group)
    if (!existsSync(base)) continue
    for (const name of readdirSync(base).sort()) if (existsSync(join(base, name, 'package.json'))) dirs.push(`${group}/${name}`)
  }
  if (existsSync(join(ROOT, 'bench', 'package.json'))) dirs.push('bench')
  return dirs
}

/** An `exports` value with the "shallot-source" condition taken out, at any depth. */
export function publishedExports(value) {
  if (typeof value !== 'object' || value === null) return value
  return Object.fromEntries(
    Object.entries(value)
      .filter(([key]) => key !== 'shallot-source')
      .map(([key, v]) => [key, publishedExports(v)]),
  )
}

const FIRST_KEYS = [
  'name',
  'version',
  'private',
  'description',
  'keywords',
  'homepage',
  'bugs',
  'repository',
  'license',
  'author',
  'type',
  'sideEffects',
  'engines',
  'bin',
  'exports',
  'publishConfig',
  'files',
]

function ordered(manifest) {
  const out = {}
  for (const key of FIRST_KEYS) if (key in manifest) out[key] = manifest[key]
  for (const [key, value] of Object.entries(manifest)) if (!(key in out)) out[key] = value
  return out
}

/** The manifest as it should be. A private package only gets the engines. */
export function stamp(manifest, dir) {
  const m = { ...manifest, engines: { ...manifest.engines, node: NODE_ENGINES } }
  if (m.private === true) return ordered(m)
  m.keywords = [...new Set([...COMMON_KEYWORDS, ...(m.keywords ?? [])])]
  m.homepage = `${REPOSITORY}/tree/${BRANCH}/${dir}#readme`
  m.bugs = { url: `${REPOSITORY}/issues` }
  m.repository = { type: 'git', url: `git+${REPOSITORY}.git`, directory: dir }
  m.license = 'MIT'
  m.author = AUTHOR
  m.exports = { ...m.exports, './package.json': './package.json' }
  const publishConfig = { ...m.publishConfig, exports: publishedExports(m.exports) }
  if (m.name.startsWith('@')) publishConfig.access = 'public'
  m.publishConfig = publishConfig
  // The build, the sources its maps point to, the schema, the LICENSE: never the repo's own scripts or tsc's
  // incremental-build state.
  m.files = [...new Set([...(m.files ?? []).filter((f) => f !== 'scripts' && f !== 'scripts/'), '!dist/.tsbuildinfo', 'LICENSE'])]
  return ordered(m)
}

const LINK = /(\]\()([^)\s]+)(\))|(^\[[^\]]+\]:\s*)(\S+)/gm

/** A package README with every link that leaves the package made absolute (blob for files, tree for folders). */
export function absoluteLinks(markdown, dir) {
  return markdown.replace(LINK, (whole, open, target, close, refOpen, refTarget) => {
    const link = target ?? refTarget
    const fixed = absolute(link, dir)
    if (fixed === link) return whole
    return target !== undefined ? `${open}${fixed}${close}` : `${refOpen}${fixed}`
  })
}

/** Whether a link target is relative and points outside the package folder. */
export function leavesPackage(link, dir) {
  if (/^[a-z][a-z0-9+.-]*:/i.test(link) || link.startsWith('#') || link.startsWith('/')) return false
  const path = link.split('#')[0]
  const target = posix.normalize(posix.join(dir, path))
  return target !== dir && !target.startsWith(`${dir}/`)
}

function absolute(link, dir) {
  if (!leavesPackage(link, dir)) return link
  const [path, hash] = link.split('#')
  const target = posix.normalize(posix.join(dir, path)).replace(/\/$/, '')
  const onDisk = join(ROOT, target)
  const kind = existsSync(onDisk) && statSync(onDisk).isDirectory() ? 'tree' : 'blob'
  return `${REPOSITORY}/${kind}/${BRANCH}/${target}${hash === undefined ? '' : `#${hash}`}`
}

function main() {
  const check = process.argv.includes('--check')
  const drift = []
  const license = readFileSync(join(ROOT, 'LICENSE'), 'utf8')
  const rootManifestPath = join(ROOT, 'package.json')
  const rootManifest = JSON.parse(readFileSync(rootManifestPath, 'utf8'))
  const files = [[rootManifestPath, rootManifest, { ...rootManifest, engines: { ...rootManifest.engines, node: NODE_ENGINES } }]]
  for (const dir of workspaceDirs()) {
    const path = join(ROOT, dir, 'package.json')
    const manifest = JSON.parse(readFileSync(path, 'utf8'))
    files.push([path, manifest, stamp(manifest, dir)])
    if (manifest.private === true) continue
    const licensePath = join(ROOT, dir, 'LICENSE')
    if (!existsSync(licensePath) || readFileSync(licensePath, 'utf8') !== license) {
      drift.push(`${dir}/LICENSE`)
      if (!check) copyFileSync(join(ROOT, 'LICENSE'), licensePath)
    }
    const readmePath = join(ROOT, dir, 'README.md')
    if (existsSync(readmePath)) {
      const readme = readFileSync(readmePath, 'utf8')
      const fixed = absoluteLinks(readme, dir)
      if (fixed !== readme) {
        drift.push(`${dir}/README.md`)
        if (!check) writeFileSync(readmePath, fixed)
      }
    }
  }
  for (const [path, before, after] of files) {
    if (JSON.stringify(before) === JSON.stringify(after)) continue
    drift.push(relative(ROOT, path))
    if (!check) writeFileSync(path, `${JSON.stringify(after, null, 2)}\n`)
  }
  if (check && drift.length > 0) {
    console.error(`stamp-manifests: out of date, run node .ci/stamp-manifests.mjs:\n  ${drift.join('\n  ')}`)
    process.exit(1)
  }
  console.log(drift.length === 0 ? 'stamp-manifests: every manifest is up to date' : `stamp-manifests: updated ${drift.join(', ')}`)
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main()
