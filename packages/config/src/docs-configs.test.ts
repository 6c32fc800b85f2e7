import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { scriptedModel } from '@shallot/testing'
import ts from 'typescript'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { checkConfig } from './index.js'

// Every config file the docs show is run with the code shown next to it, the way a reader would:
// the config saved under the name the code loads, the code compiled and run in a project folder whose
// node_modules holds the workspace's packages, the example rate limiter, and the @acme/shallot-quota
// package that docs/writing-middleware.md and docs/publishing.md build (made from those pages' blocks).

const ROOT = resolve(fileURLToPath(new URL('../../..', import.meta.url)))

interface Block {
  readonly doc: string
  readonly lang: string
  /** 1-based line of the first code line in the markdown file. */
  readonly line: number
  readonly code: string
}

function blocksOf(doc: string): Block[] {
  const blocks: Block[] = []
  let open: { fence: string; lang: string; start: number; body: string[] } | undefined
  readFileSync(join(ROOT, doc), 'utf8')
    .split(/\r?\n/)
    .forEach((text, i) => {
      if (open === undefined) {
        const start = /^ {0,3}(`{3,}|~{3,})\s*([^\s`{]*)/.exec(text)
        if (start) open = { fence: start[1] as string, lang: (start[2] ?? '').toLowerCase(), start: i + 2, body: [] }
        return
      }
      if (new RegExp(`^ {0,3}${open.fence[0] === '`' ? '`' : '~'}{${open.fence.length},}\\s*$`).test(text)) {
        blocks.push({ doc, lang: open.lang, line: open.start, code: open.body.join('\n') })
        open = undefined
        return
      }
      open.body.push(text)
    })
  return blocks
}

function docFiles(): string[] {
  const files = ['README.md']
  for (const name of readdirSync(join(ROOT, 'docs')).sort()) if (name.endsWith('.md')) files.push(`docs/${name}`)
  for (const group of ['packages', 'examples']) {
    for (const name of readdirSync(join(ROOT, group)).sort())
      if (existsSync(join(ROOT, group, name, 'README.md'))) files.push(`${group}/${name}/README.md`)
  }
  return files
}

const isConfig = (block: Block): boolean => {
  if (block.lang === 'yaml' || block.lang === 'yml') return true
  if (block.lang !== 'json') return false
  try {
    const data = JSON.parse(block.code) as unknown
    return typeof data === 'object' && data !== null && 'stack' in data
  } catch {
    return false
  }
}
const isCode = (block: Block) => block.lang === 'ts' || block.lang === 'typescript'
const LOADS = /loadConfig\(\s*'([^']+)'/

interface Pair {
  readonly config: Block
  /** The ts block beside it that loads a config file: the next one on the page, else the one before. */
  readonly code: Block | undefined
}

function pairsOf(doc: string): Pair[] {
  const blocks = blocksOf(doc)
  return blocks.flatMap((block, i) => {
    if (!isConfig(block)) return []
    const loads = (b: Block | undefined) => b !== undefined && isCode(b) && LOADS.test(b.code)
    const after = blocks.slice(i + 1).find((b) => isCode(b) || isConfig(b))
    const before = [...blocks.slice(0, i)].reverse().find((b) => isCode(b) || isConfig(b))
    return [{ config: block, code: loads(after) ? after : loads(before) ? before : undefined }]
  })
}

const compile = (code: string) =>
  ts.transpileModule(code, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } }).outputText

let project: string

function link(name: string, target: string): void {
  const at = join(project, 'node_modules', ...name.split('/'))
  mkdirSync(dirname(at), { recursive: true })
  symlinkSync(target, at, 'dir')
}

/**
 * The package docs/writing-middleware.md writes, with the package.json docs/publishing.md gives it,
 * installed by a link as a workspace would (so the test runner compiles it rather than Node loading it raw).
 */
function buildQuotaPackage(): void {
  const dir = join(project, 'shallot-quota')
  const manifest = blocksOf('docs/publishing.md').find((b) => b.lang === 'json' && b.code.includes('"@acme/shallot-quota"'))
  if (manifest === undefined) throw new Error('docs/publishing.md no longer shows the package.json of @acme/shallot-quota')
  mkdirSync(join(dir, 'dist'), { recursive: true })
  writeFileSync(join(dir, 'package.json'), manifest.code)
  for (const block of blocksOf('docs/writing-middleware.md').filter(isCode)) {
    const file = /^\/\/ src\/([\w.-]+)\.ts\s*$/.exec(block.code.split('\n', 1)[0] ?? '')?.[1]
    if (file === undefined || file.endsWith('.test')) continue
    writeFileSync(join(dir, 'dist', `${file}.js`), compile(block.code))
  }
  link('@acme/shallot-quota', dir)
}

beforeAll(() => {
  project = mkdtempSync(join(tmpdir(), 'shallot-docs-project-'))
  for (const group of ['packages', 'examples']) {
    for (const name of readdirSync(join(ROOT, group))) {
      const manifest = join(ROOT, group, name, 'package.json')
      if (!existsSync(manifest)) continue
      const pkg = JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }
      if (pkg.name !== undefined) link(pkg.name, join(ROOT, group, name))
    }
  }
  link('zod', dirname(realpathSync(createRequire(import.meta.url).resolve('zod/package.json'))))
  buildQuotaPackage()
})
afterAll(() => rmSync(project, { recursive: true, force: true }))

/** Values a block declares (`declare const model: ModelAdapter`) instead of building: what a reader's app would pass. */
const provided = {
  model: () =>
    scriptedModel([
      ({ tools }) => ({ toolCalls: tools.some((t) => t.name === 'search') ? [{ name: 'search', args: { q: 'refunds' } }] : [] }),
      { text: 'Refunds take five days.' },
    ]),
}

async function runPair(pair: Pair, dir: string): Promise<void> {
  const name = pair.code === undefined ? `shallot.${pair.config.lang}` : (LOADS.exec(pair.code.code)?.[1] as string)
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, name), pair.config.code)
  if (pair.code === undefined) {
    // No code beside it: everything the file alone can tell must pass.
    const check = await checkConfig(join(dir, name))
    if (check.error !== undefined) throw check.error
    return
  }
  const declared = [...pair.code.code.matchAll(/^declare const (\w+)/gm)].map((m) => m[1] as keyof typeof provided)
  const missing = declared.filter((d) => !(d in provided))
  if (missing.length > 0) throw new Error(`the harness has no value for declare const ${missing.join(', ')}`)
  const values = Object.fromEntries(declared.map((d) => [d, provided[d]()]))
  ;(globalThis as { __shallotDocs?: unknown }).__shallotDocs = values
  const prelude = declared.length === 0 ? '' : `const { ${declared.join(', ')} } = globalThis.__shallotDocs\n`
  const main = join(dir, 'main.mjs')
  writeFileSync(main, prelude + compile(pair.code.code))
  const cwd = process.cwd()
  process.chdir(dir)
  try {
    await import(pathToFileURL(main).href)
  } finally {
    process.chdir(cwd)
  }
}

const pairs = docFiles().flatMap(pairsOf)

describe('every config in the docs runs with the code beside it', () => {
  it('finds the configs of docs/ and the READMEs, and pairs those with loading code', () => {
    const where = pairs.map((p) => `${p.config.doc}:${p.config.line}`)
    expect(where).toEqual(
      expect.arrayContaining([expect.stringMatching(/^docs\/config\.md:/), expect.stringMatching(/^packages\/config\/README\.md:/)]),
    )
    expect(pairs.filter((p) => p.code !== undefined).length).toBeGreaterThanOrEqual(3)
  })

  it.each(pairs.map((p, i) => [`${p.config.doc}:${p.config.line}`, p, i] as const))('%s', async (_, pair, i) => {
    const err = await runPair(pair, join(project, `pair-${i}`)).then(
      () => undefined,
      (e: unknown) => e,
    )
    const code = pair.code === undefined ? 'loaded alone' : `with the code at ${pair.code.doc}:${pair.code.line}`
    expect(err, `${pair.config.doc}:${pair.config.line} (${code}): ${String(err)}`).toBeUndefined()
  })
})
