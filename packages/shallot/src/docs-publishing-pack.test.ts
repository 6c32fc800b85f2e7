import { execFile } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import ts from 'typescript'
import { afterAll, beforeAll, expect, it } from 'vitest'

// docs/publishing.md says what `npm pack --dry-run` lists for the package it builds. Here that package is made from
// the pages' own blocks (publishing.md's package.json and tsconfig.json, writing-middleware.md's src/ files, tests
// included), built with that tsconfig, and packed by npm; every file npm would ship must be one the page names.

const ROOT = resolve(fileURLToPath(new URL('../../..', import.meta.url)))
const read = (doc: string) => readFileSync(join(ROOT, doc), 'utf8')
const blocks = (doc: string, lang: string) =>
  [...read(doc).matchAll(new RegExp(`\`\`\`${lang}\\n([\\s\\S]*?)\`\`\``, 'g'))].map((m) => m[1] as string)

let dir: string
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'shallot-pack-doc-'))
  const json = blocks('docs/publishing.md', 'json')
  const manifest = json.find((code) => code.includes('"@acme/shallot-quota"'))
  const tsconfig = json.find((code) => code.includes('"compilerOptions"'))
  if (manifest === undefined || tsconfig === undefined)
    throw new Error('docs/publishing.md no longer shows the package.json and tsconfig.json')
  writeFileSync(join(dir, 'package.json'), manifest)
  writeFileSync(join(dir, 'tsconfig.json'), tsconfig)
  writeFileSync(join(dir, 'LICENSE'), 'MIT License\n')
  writeFileSync(join(dir, 'README.md'), '# @acme/shallot-quota\n')
  mkdirSync(join(dir, 'src'))
  for (const code of blocks('docs/writing-middleware.md', 'ts')) {
    const file = /^\/\/ (src\/[\w.-]+\.ts)\s*$/.exec(code.split('\n', 1)[0] ?? '')?.[1]
    if (file !== undefined) writeFileSync(join(dir, file), code)
  }
  // The tsconfig's own emit: only file names matter here (docs.test.ts type-checks these blocks).
  const config = ts.getParsedCommandLineOfConfigFile(
    join(dir, 'tsconfig.json'),
    { types: [], noEmitOnError: false },
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => {
        throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'))
      },
    },
  )
  if (config === undefined) throw new Error('tsconfig.json did not parse')
  ts.createProgram({ rootNames: config.fileNames, options: config.options }).emit()
}, 60_000)
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** `dist/*.js` → a pattern for one path: `*` stays inside one folder. */
const pattern = (glob: string) => new RegExp(`^${glob.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*')}$`)

it('npm pack --dry-run lists what docs/publishing.md says it lists, .map files included, and nothing else', async () => {
  const sentence = /`npm pack --dry-run` lists exactly: (.*?)\.\s/.exec(read('docs/publishing.md').replace(/\n/g, ' '))?.[1]
  if (sentence === undefined) throw new Error('docs/publishing.md no longer says what `npm pack --dry-run` lists exactly')
  const named = [...sentence.matchAll(/`([^`]+)`/g)].map((m) => m[1] as string)
  expect(named).toContain('dist/*.js.map')

  const { stdout } = await promisify(execFile)('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: dir })
  const packed = (JSON.parse(stdout) as Array<{ files: Array<{ path: string }> }>)[0]?.files.map((f) => f.path) ?? []
  const sources = packed.filter((path) => path.startsWith('src/'))
  expect(sources.length).toBeGreaterThan(2)
  // The page's src/ has tests (quota.test.ts, quota.conformance.test.ts); "without the tests" holds.
  expect(packed.filter((path) => path.endsWith('.test.ts'))).toEqual([])
  expect(packed.filter((path) => !named.some((glob) => pattern(glob).test(path)))).toEqual([])
  expect(named.filter((glob) => !packed.some((path) => pattern(glob).test(path)))).toEqual([])
}, 60_000)
