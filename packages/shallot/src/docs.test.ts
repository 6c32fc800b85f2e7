import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { beforeAll, describe, expect, it } from 'vitest'

// Every ```ts block in the docs is type-checked here, as a user would compile it: the repo's strict
// options, NodeNext resolution, packages resolved through node_modules to their built .d.ts files.
// Blocks are compiled from memory as virtual files that sit in a package folder (so its node_modules
// and its own package name resolve); nothing is written to disk. One program checks them all.

const ROOT = resolve(fileURLToPath(new URL('../../..', import.meta.url)))
const SHALLOT_DIR = join(ROOT, 'packages', 'shallot')

interface DocBlock {
  /** The markdown file, relative to the repo root. */
  readonly doc: string
  /** 1-based index among the file's ts blocks. */
  readonly index: number
  /** 1-based line of the block's first code line in the markdown file. */
  readonly line: number
  readonly code: string
}

const TS_LANGS = new Set(['ts', 'typescript', 'mts'])

/** The ts blocks of a markdown text, in order, with the markdown line each starts on. */
function tsBlocks(doc: string, markdown: string): DocBlock[] {
  const blocks: DocBlock[] = []
  const lines = markdown.split(/\r?\n/)
  let open: { fence: string; lang: string; start: number; body: string[] } | undefined
  lines.forEach((text, i) => {
    if (open === undefined) {
      const start = /^ {0,3}(`{3,}|~{3,})\s*([^\s`{]*)/.exec(text)
      if (start) open = { fence: start[1] as string, lang: (start[2] ?? '').toLowerCase(), start: i + 2, body: [] }
      return
    }
    const close = new RegExp(`^ {0,3}${open.fence[0] === '`' ? '`' : '~'}{${open.fence.length},}\\s*$`)
    if (close.test(text)) {
      if (TS_LANGS.has(open.lang)) blocks.push({ doc, index: blocks.length + 1, line: open.start, code: open.body.join('\n') })
      open = undefined
      return
    }
    open.body.push(text)
  })
  return blocks
}

/** The workspace's packages and examples: name → folder. */
function workspacePackages(): Map<string, string> {
  const packages = new Map<string, string>()
  for (const group of ['packages', 'examples']) {
    const dir = join(ROOT, group)
    if (!existsSync(dir)) continue
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const manifest = join(dir, entry.name, 'package.json')
      if (!entry.isDirectory() || !existsSync(manifest)) continue
      const { name } = JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }
      if (name !== undefined) packages.set(name, join(dir, entry.name))
    }
  }
  return packages
}

/** The markdown files whose ts blocks must compile: the root README, docs/*.md, docs/topics/*.md, and every package's and example's README. */
function docFiles(): string[] {
  const files = ['README.md']
  for (const folder of ['docs', 'docs/topics']) {
    const dir = join(ROOT, folder)
    if (existsSync(dir)) for (const name of readdirSync(dir).sort()) if (name.endsWith('.md')) files.push(`${folder}/${name}`)
  }
  for (const group of ['packages', 'examples']) {
    const dir = join(ROOT, group)
    if (!existsSync(dir)) continue
    for (const name of readdirSync(dir).sort()) if (existsSync(join(dir, name, 'README.md'))) files.push(`${group}/${name}/README.md`)
  }
  return files
}

/** The folder a block is compiled in: its own package for a package README, else the umbrella package. */
function homeOf(doc: string): string {
  const match = /^(packages|examples)\/([^/]+)\/README\.md$/.exec(doc)
  return match ? join(ROOT, match[1] as string, match[2] as string) : SHALLOT_DIR
}

/** Packages that exist only as a docs walk-through (named-file blocks with a `src/index.ts`): name → the page. */
const BUILT_BY_DOCS: Readonly<Record<string, string>> = { '@acme/shallot-quota': 'docs/writing-middleware.md' }

/** A block whose first line is a comment naming a file (`// src/quota.ts`) is compiled as that file. */
const FILE_COMMENT = /^\/\/ ((?:[\w-]+\/)*[\w.-]+\.m?ts)\s*$/

/**
 * Where a block is compiled: `<slug><n>.mts`, or, for a block that names its file, that file in a
 * folder of its own page, so the files of one walk-through import each other (`./quota.js`).
 */
function virtualPath(block: DocBlock): string {
  const slug = block.doc.replace(/[^A-Za-z0-9]+/g, '-')
  const named = FILE_COMMENT.exec(block.code.split('\n', 1)[0] ?? '')?.[1]
  if (named !== undefined) return join(homeOf(block.doc), '.docs-check', slug, named)
  return join(homeOf(block.doc), '.docs-check', `${slug}${block.index}.mts`)
}

/** The repo's strict options (tsconfig.base.json), for checking only. */
function compilerOptions(): ts.CompilerOptions {
  const base = join(ROOT, 'tsconfig.base.json')
  const read = ts.readConfigFile(base, ts.sys.readFile)
  if (read.error) throw new Error(ts.flattenDiagnosticMessageText(read.error.messageText, '\n'))
  const parsed = ts.parseJsonConfigFileContent(read.config, ts.sys, ROOT, undefined, base)
  return {
    ...parsed.options,
    noEmit: true,
    composite: false,
    declaration: false,
    declarationMap: false,
    sourceMap: false,
    incremental: false,
    types: ['node'],
    moduleDetection: ts.ModuleDetectionKind.Force,
  }
}

/** Type-checks blocks in one program; returns each block's diagnostics as `doc block N line L: message`. */
function checkBlocks(blocks: readonly DocBlock[]): Map<DocBlock, string[]> {
  const options = compilerOptions()
  const workspace = workspacePackages()
  const byPath = new Map<string, DocBlock>()
  for (const block of blocks) {
    const path = virtualPath(block)
    const taken = byPath.get(path)
    if (taken !== undefined)
      throw new Error(`${block.doc} block ${block.index} names the same file as block ${taken.index}: ${relative(ROOT, path)}`)
    byPath.set(path, block)
  }
  const host = ts.createCompilerHost(options, true)
  const { getSourceFile, fileExists, readFile } = host
  const virtualDirs = new Set<string>()
  for (const path of byPath.keys()) for (let dir = dirname(path); !existsSync(dir); dir = dirname(dir)) virtualDirs.add(dir)
  const { directoryExists, realpath } = host
  host.directoryExists = (dir) => virtualDirs.has(dir) || directoryExists?.call(host, dir) !== false
  host.realpath = (path) => (byPath.has(path) || virtualDirs.has(path) ? path : (realpath?.call(host, path) ?? path))
  host.fileExists = (file) => byPath.has(file) || fileExists.call(host, file)
  host.readFile = (file) => byPath.get(file)?.code ?? readFile.call(host, file)
  host.getSourceFile = (file, language, onError, fresh) => {
    const block = byPath.get(file)
    return block === undefined
      ? getSourceFile.call(host, file, language, onError, fresh)
      : ts.createSourceFile(file, block.code, language, true)
  }
  const cache = ts.createModuleResolutionCache(ROOT, (f) => f, options)
  host.resolveModuleNameLiterals = (literals, containingFile, redirected, opts, sourceFile) =>
    literals.map((literal) => {
      const mode = ts.getModeForUsageLocation(sourceFile, literal, opts)
      const found = ts.resolveModuleName(literal.text, containingFile, opts, host, cache, redirected, mode)
      if (found.resolvedModule !== undefined) return found
      // A README may import a sibling package its own package does not depend on: resolve it the way
      // a user who installed it would, from inside that package (its own name resolves there).
      const name = /^(@[^/]+\/[^/]+|[^@./][^/]*)/.exec(literal.text)?.[1]
      const built = name === undefined ? undefined : BUILT_BY_DOCS[name]
      if (built !== undefined && byPath.has(containingFile)) {
        // The package a walk-through builds resolves to that page's files, for the pages that install it.
        const page = join(homeOf(built), '.docs-check', built.replace(/[^A-Za-z0-9]+/g, '-'), '__docs__.mts')
        return ts.resolveModuleName(
          `./src/index.js${literal.text.slice((name as string).length)}`,
          page,
          opts,
          host,
          cache,
          redirected,
          mode,
        )
      }
      const dir = name === undefined ? undefined : workspace.get(name)
      if (dir === undefined || !byPath.has(containingFile)) return found
      return ts.resolveModuleName(literal.text, join(dir, 'src', '__docs__.mts'), opts, host, cache, redirected, mode)
    })
  const program = ts.createProgram({ rootNames: [...byPath.keys()], options, host })
  const result = new Map<DocBlock, string[]>()
  for (const [path, block] of byPath) {
    const file = program.getSourceFile(path)
    if (file === undefined) throw new Error(`docs check: ${path} did not enter the program`)
    const diagnostics = [...program.getSyntacticDiagnostics(file), ...program.getSemanticDiagnostics(file)]
    result.set(
      block,
      diagnostics.map((d) => {
        const where = d.start === undefined ? 0 : file.getLineAndCharacterOfPosition(d.start).line
        return `${block.doc} block ${block.index} line ${where + 1} (${block.doc}:${block.line + where}): ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`
      }),
    )
  }
  const global = [...program.getOptionsDiagnostics(), ...program.getGlobalDiagnostics()]
  if (global.length > 0) throw new Error(global.map((d) => ts.flattenDiagnosticMessageText(d.messageText, ' ')).join('\n'))
  return result
}

/** Packages the blocks import whose declarations are missing: the docs check needs `pnpm run build` first. */
function unbuilt(blocks: readonly DocBlock[]): string[] {
  const missing: string[] = []
  for (const [name, dir] of workspacePackages()) {
    if (!blocks.some((block) => block.code.includes(`'${name}'`) || block.code.includes(`'${name}/`))) continue
    const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { exports?: { '.'?: { types?: string } } }
    const types = manifest.exports?.['.']?.types
    if (types !== undefined && !existsSync(join(dir, types))) missing.push(`${name} (${relative(ROOT, join(dir, types))})`)
  }
  return missing
}

const docs = docFiles()
const blocks = docs.flatMap((doc) => tsBlocks(doc, readFileSync(join(ROOT, doc), 'utf8')))

describe('the docs checker', () => {
  it('finds ts blocks by fence and language, with the markdown line each starts on', () => {
    const markdown = [
      '# t',
      '```ts',
      'const a = 1',
      '```',
      '```text',
      'not code',
      '```',
      '~~~typescript',
      'const b = 2',
      '',
      'b',
      '~~~',
    ].join('\n')
    expect(tsBlocks('x.md', markdown)).toEqual([
      { doc: 'x.md', index: 1, line: 3, code: 'const a = 1' },
      { doc: 'x.md', index: 2, line: 9, code: 'const b = 2\n\nb' },
    ])
  })

  it('compiles a block that names its file as that file, so blocks of one page import each other', () => {
    const lib: DocBlock = { doc: 'docs/fixture.md', index: 1, line: 3, code: '// src/answer.ts\nexport const answer = 42' }
    const user: DocBlock = {
      doc: 'docs/fixture.md',
      index: 2,
      line: 9,
      code: "// src/index.ts\nimport { answer } from './answer.js'\nexport const text: string = answer",
    }
    const results = checkBlocks([lib, user])
    expect(results.get(lib)).toEqual([])
    expect(results.get(user)).toEqual([
      "docs/fixture.md block 2 line 3 (docs/fixture.md:11): Type 'number' is not assignable to type 'string'.",
    ])
  }, 120_000)

  it('reports a block that does not compile with its doc, block and line', () => {
    const bad: DocBlock = {
      doc: 'docs/fixture.md',
      index: 2,
      line: 10,
      code: "import { createStack } from '@shallot/core'\nconst n: number = 'one'\ncreateStack()",
    }
    const messages = checkBlocks([bad]).get(bad) ?? []
    expect(messages).toEqual([
      "docs/fixture.md block 2 line 2 (docs/fixture.md:11): Type 'string' is not assignable to type 'number'.",
      expect.stringMatching(/^docs\/fixture\.md block 2 line 3 \(docs\/fixture\.md:12\): Expected 1 arguments, but got 0\./),
    ])
  }, 120_000)
})

describe('the docs link up', () => {
  it('docs/README.md links every page in docs/ (the topic pages through their own index, topics-index.test.ts)', () => {
    const index = readFileSync(join(ROOT, 'docs', 'README.md'), 'utf8')
    const pages = docs.filter((doc) => /^docs\/[^/]+\.md$/.test(doc) && doc !== 'docs/README.md').map((doc) => doc.slice('docs/'.length))
    expect(pages.filter((page) => !index.includes(`](${page})`))).toEqual([])
  })

  it('the root README links docs/', () => {
    expect(readFileSync(join(ROOT, 'README.md'), 'utf8')).toMatch(/\]\(docs\/(README\.md)?\)/)
  })

  it('every relative link in the docs points at a file or folder that exists', () => {
    const broken: string[] = []
    for (const doc of docs) {
      const text = readFileSync(join(ROOT, doc), 'utf8').replace(/```[\s\S]*?```/g, '')
      for (const match of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = (match[1] as string).split('#')[0] as string
        if (target === '' || /^[a-z]+:/i.test(target)) continue
        if (!existsSync(resolve(ROOT, dirname(doc), target))) broken.push(`${doc}: ${match[1]}`)
      }
    }
    expect(broken).toEqual([])
  })
})

describe('every ts block in the docs compiles', () => {
  let results: Map<DocBlock, string[]>

  beforeAll(() => {
    const missing = unbuilt(blocks)
    if (missing.length > 0) {
      throw new Error(
        `the docs check compiles against the packages' built declarations, and these are missing: ${missing.join(', ')}. Run \`pnpm run build\` first (\`pnpm test\` does).`,
      )
    }
    results = checkBlocks(blocks)
  }, 180_000)

  it('reads the root README, docs/, docs/topics/ and every package README', () => {
    expect(docs).toContain('README.md')
    expect(docs).toContain('docs/errors.md')
    expect(docs).toContain('docs/topics/onion.md')
    expect(docs).toContain('packages/core/README.md')
    expect(blocks.length).toBeGreaterThan(20)
  })

  for (const block of blocks) {
    it(`${block.doc} block ${block.index} (line ${block.line})`, () => {
      const messages = results.get(block) ?? []
      expect(messages, messages.join('\n')).toEqual([])
    })
  }
})
