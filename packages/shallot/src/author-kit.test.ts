import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'

// The author kit (decision 535): what a layer, host or store needs from core is `@shallot/core` or
// `@shallot/core/kit`, and every kit name is on docs/author-kit.md with a sample that runs here.
// Fails when a package imports from core something the page does not document, when the page lists
// a name the kit does not export, or when a sample stops working.

const ROOT = resolve(fileURLToPath(new URL('../../..', import.meta.url)))
const DOC = 'docs/author-kit.md'
const KIT = 'packages/core/src/kit.ts'
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8')

interface Section {
  readonly heading: string
  readonly names: readonly string[]
  readonly body: string
}

/** The page's `###` sections: the names in the heading's code spans (`deadlineQueue(ms)` names deadlineQueue) and the text under it. */
function sections(markdown: string): Section[] {
  const found: Section[] = []
  const parts = markdown.split(/^### /m).slice(1)
  for (const part of parts) {
    const newline = part.indexOf('\n')
    const heading = part.slice(0, newline)
    const names = [...heading.matchAll(/`([A-Za-z_$][\w$]*)/g)].map((m) => m[1] as string)
    found.push({ heading, names, body: part.slice(newline + 1).split(/^## /m)[0] as string })
  }
  return found
}

/** The ```ts blocks of a markdown text, with the line each starts on. */
function samples(markdown: string): { line: number; code: string }[] {
  const blocks: { line: number; code: string }[] = []
  const lines = markdown.split('\n')
  for (let i = 0; i < lines.length; i++) {
    if (lines[i]?.trim() !== '```ts') continue
    const start = i + 1
    while (i + 1 < lines.length && lines[i + 1]?.trim() !== '```') i++
    blocks.push({ line: start + 1, code: lines.slice(start, i + 1).join('\n') })
    i++
  }
  return blocks
}

/** The names `packages/core/src/kit.ts` exports, each with whether it is a type only. */
function kitExports(): Map<string, { typeOnly: boolean }> {
  const file = ts.createSourceFile(KIT, read(KIT), ts.ScriptTarget.Latest, false)
  const names = new Map<string, { typeOnly: boolean }>()
  for (const statement of file.statements) {
    if (!ts.isExportDeclaration(statement)) continue
    const clause = statement.exportClause
    if (clause === undefined || !ts.isNamedExports(clause)) throw new Error(`${KIT}: export * hides what the kit holds; name each export`)
    for (const element of clause.elements) names.set(element.name.text, { typeOnly: statement.isTypeOnly || element.isTypeOnly })
  }
  return names
}

/** Every TypeScript source of the workspace's packages, examples and bench, core's own excepted. */
function workspaceSources(): string[] {
  const files: string[] = []
  const walk = (dir: string) => {
    for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
      if (entry.name === 'node_modules' || entry.name === 'dist' || entry.name.startsWith('.')) continue
      const path = `${dir}/${entry.name}`
      if (entry.isDirectory()) walk(path)
      else if (/\.(m|c)?tsx?$/.test(entry.name) && !entry.name.endsWith('.d.ts')) files.push(path)
    }
  }
  for (const group of ['packages', 'examples'])
    for (const entry of readdirSync(join(ROOT, group), { withFileTypes: true }))
      if (entry.isDirectory() && entry.name !== 'core' && existsSync(join(ROOT, group, entry.name, 'src')))
        walk(`${group}/${entry.name}/src`)
  if (existsSync(join(ROOT, 'bench'))) for (const dir of ['bench/src', 'bench/agents']) if (existsSync(join(ROOT, dir))) walk(dir)
  return files
}

interface CoreImport {
  readonly file: string
  readonly specifier: string
  readonly names: readonly string[]
}

/** What each file imports or re-exports from a `@shallot/core/…` subpath (the main entry is the public API). */
function coreSubpathImports(files: readonly string[]): CoreImport[] {
  return files.flatMap((path) => importsIn(path, read(path)))
}

/** {@link coreSubpathImports} of one file's text. */
function importsIn(path: string, text: string): CoreImport[] {
  const found: CoreImport[] = []
  if (text.includes('@shallot/core/')) {
    const file = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, false)
    const visit = (node: ts.Node) => {
      const spec =
        (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)
          ? node.moduleSpecifier.text
          : ts.isCallExpression(node) &&
              node.expression.kind === ts.SyntaxKind.ImportKeyword &&
              node.arguments[0] &&
              ts.isStringLiteral(node.arguments[0])
            ? node.arguments[0].text
            : undefined
      if (spec?.startsWith('@shallot/core/')) {
        const names: string[] = []
        const bindings = ts.isImportDeclaration(node) ? node.importClause?.namedBindings : undefined
        if (bindings !== undefined && ts.isNamedImports(bindings))
          for (const element of bindings.elements) names.push((element.propertyName ?? element.name).text)
        if (ts.isExportDeclaration(node) && node.exportClause !== undefined && ts.isNamedExports(node.exportClause))
          for (const element of node.exportClause.elements) names.push((element.propertyName ?? element.name).text)
        found.push({ file: path, specifier: spec, names })
      }
      ts.forEachChild(node, visit)
    }
    visit(file)
  }
  return found
}

/** What a sample may import: the kit, core, and what a sample needs to check itself. */
const MODULES: Readonly<Record<string, () => Promise<unknown>>> = {
  '@shallot/core': () => import('@shallot/core'),
  '@shallot/core/kit': () => import('@shallot/core/kit'),
  '@shallot/testing': () => import('@shallot/testing'),
  zod: () => import('zod'),
  'node:assert/strict': () => import('node:assert/strict'),
}

/** A sample as a function of a module loader: TypeScript removed, its imports turned into loads. */
function runnable(code: string): (load: (specifier: string) => Promise<unknown>) => Promise<void> {
  const js = ts
    .transpileModule(code, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2023 } })
    .outputText.replace(/^export \{\};?$/m, '')
  let n = 0
  const body = js.replace(/^import\s+([^'"]+?)\s+from\s+(['"])([^'"]+)\2;?$/gm, (_all, clause: string, _q, specifier: string) => {
    const module = `__module${n++}`
    const lines = [`const ${module} = await __load(${JSON.stringify(specifier)});`]
    const named = /\{([^}]*)\}/.exec(clause)?.[1]
    const head = clause
      .replace(/\{[^}]*\}/, '')
      .replace(/,\s*$/, '')
      .trim()
    if (/^\*\s+as\s+/.test(head)) lines.push(`const ${head.replace(/^\*\s+as\s+/, '')} = ${module};`)
    else if (head !== '') lines.push(`const ${head} = ${module}.default;`)
    if (named !== undefined && named.trim() !== '') lines.push(`const { ${named.replace(/\s+as\s+/g, ': ')} } = ${module};`)
    return lines.join(' ')
  })
  if (/^\s*(import|export)\s/m.test(body)) throw new Error(`a sample's import or export was not understood:\n${body}`)
  const AsyncFunction = (async () => {}).constructor as new (...args: string[]) => (load: unknown) => Promise<void>
  return new AsyncFunction('__load', body)
}

async function load(specifier: string): Promise<unknown> {
  const loader = MODULES[specifier]
  if (loader === undefined) throw new Error(`${DOC}: a sample imports ${specifier}; samples import from ${Object.keys(MODULES).join(', ')}`)
  return loader()
}

const markdown = read(DOC)
const documented = sections(markdown)
const documentedNames = new Set(documented.flatMap((s) => s.names))

// Imports of the workspace's sources and a parse of its files: seconds on a loaded machine, not five.
describe('the author kit (docs/author-kit.md)', { timeout: 30_000 }, () => {
  it('documents every name the kit exports, and only those', async () => {
    const kit = kitExports()
    expect([...kit.keys()].filter((name) => !documentedNames.has(name)).sort(), `exported by ${KIT}, missing from ${DOC}`).toEqual([])
    expect([...documentedNames].filter((name) => !kit.has(name)).sort(), `listed in ${DOC}, not exported by ${KIT}`).toEqual([])
    const loaded = (await import('@shallot/core/kit')) as Record<string, unknown>
    const values = [...kit].filter(([, { typeOnly }]) => !typeOnly).map(([name]) => name)
    expect(
      values.filter((name) => loaded[name] === undefined),
      'kit values missing at run time',
    ).toEqual([])
  })

  it('gives every section a signature and a sample, and describes each of its names under the heading', () => {
    expect(documented.length).toBeGreaterThan(20)
    for (const section of documented) {
      expect(section.body, `${DOC} "### ${section.heading}" has no ts sample`).toContain('```ts')
      expect(section.body, `${DOC} "### ${section.heading}" gives no signature`).toMatch(/Signatures?:/)
      for (const name of section.names) expect(section.body, `${DOC} "### ${section.heading}": ${name} is not described`).toContain(name)
    }
  })

  it('is all any package, example or the bench imports from a core subpath', () => {
    const imports = coreSubpathImports(workspaceSources())
    expect(imports.length, 'the scan found the kit imports (or the packages moved)').toBeGreaterThan(40)
    const wrongPath = imports.filter((i) => i.specifier !== '@shallot/core/kit').map((i) => `${i.file}: ${i.specifier}`)
    expect(wrongPath, 'import these names from @shallot/core/kit (docs/author-kit.md) or @shallot/core').toEqual([])
    const undocumented = imports.flatMap((i) => i.names.filter((name) => !documentedNames.has(name)).map((name) => `${i.file}: ${name}`))
    expect(
      undocumented,
      `imported from @shallot/core/kit but not in ${DOC}: document it there (and export it) or keep it in its package`,
    ).toEqual([])
  })

  it('sees every form an import from a core subpath takes (the scan is not blind)', () => {
    const text = [
      "import {\n  callNext,\n  type secretThing as Renamed,\n} from '@shallot/core/kit'",
      "export { hashOfNamed } from '@shallot/core/internal'",
      "const lazy = () => import('@shallot/core/src/compose.js')",
      "import { createStack } from '@shallot/core'",
    ].join('\n')
    expect(importsIn('probe.ts', text)).toEqual([
      { file: 'probe.ts', specifier: '@shallot/core/kit', names: ['callNext', 'secretThing'] },
      { file: 'probe.ts', specifier: '@shallot/core/internal', names: ['hashOfNamed'] },
      { file: 'probe.ts', specifier: '@shallot/core/src/compose.js', names: [] },
    ])
    expect(documentedNames.has('secretThing')).toBe(false)
  })

  const blocks = samples(markdown)
  it('has a sample for each section, plus the import line', () => {
    expect(blocks.length).toBe(documented.length + 1)
  })

  for (const block of blocks)
    it(`runs the sample at ${DOC}:${block.line}`, async () => {
      await runnable(block.code)(load)
    })
})
