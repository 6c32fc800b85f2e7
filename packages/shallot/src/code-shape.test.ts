import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { importCircles, longFunctions, longParameterLists } from '../../../.ci/code-shape.mjs'

// Readable over clever: no non-test function in packages/*/src over ~120 lines (failing past 130), none taking more
// than five positional parameters (six or more want an options object), and no file-level import circle.
// `node .ci/code-shape.mjs` lists all three; this test fails on anything new.
const MAX_LINES = 130
const MAX_PARAMS = 5

// Over five positional parameters: none left, and none may be added.
const PENDING_PARAMETER_LISTS: Readonly<Record<string, number>> = {}

// Still over the limit, each at most as long as it is today: none left, and none may be added.
const PENDING_FUNCTIONS: Readonly<Record<string, number>> = {}

// None left: a new circle fails here.
const PENDING_CIRCLE_FOLDERS: readonly string[] = []

describe('the code stays readable: short functions, no import circles', () => {
  it(`has no new non-test function over ${MAX_LINES} lines, and none of the pending ones grew`, () => {
    const offenders = longFunctions(MAX_LINES)
      .filter((f) => {
        const allowed = PENDING_FUNCTIONS[`${f.file} ${f.name}`]
        return allowed === undefined || f.lines > allowed
      })
      .map((f) => `${f.file}:${f.line} ${f.name}: ${f.lines} lines`)
    expect(offenders, 'split these into named helpers that each read in one sitting').toEqual([])
  }, 60_000)

  it(`has no new non-test function with more than ${MAX_PARAMS} positional parameters, and none of the pending ones grew`, () => {
    const offenders = longParameterLists(MAX_PARAMS)
      .filter((f) => {
        const allowed = PENDING_PARAMETER_LISTS[`${f.file} ${f.name}`]
        return allowed === undefined || f.params > allowed
      })
      .map((f) => `${f.file}:${f.line} ${f.name}: ${f.params} parameters`)
    expect(offenders, 'pass these as an options object, or cut the function where its concepts are').toEqual([])
  }, 60_000)

  it('has no file-level import circle in packages/*/src', () => {
    const circles = importCircles()
      .filter((files) => !PENDING_CIRCLE_FOLDERS.some((folder) => files.every((file) => file.startsWith(folder))))
      .map((files) => files.join(' -> '))
    expect(circles, 'move what both sides need to a leaf file that imports neither').toEqual([])
  }, 60_000)
})

describe('the checker finds what it must', () => {
  const root = mkdtempSync(join(tmpdir(), 'code-shape-'))
  const write = (path: string, text: string) => {
    mkdirSync(dirname(join(root, path)), { recursive: true })
    writeFileSync(join(root, path), text)
  }
  afterAll(() => rmSync(root, { recursive: true, force: true }))
  const body = (n: number) => Array.from({ length: n }, (_, i) => `  total += ${i}`).join('\n')
  write('packages/x/src/long.ts', `export function long(): number {\n  let total = 0\n${body(140)}\n  return total\n}\n`)
  write('packages/x/src/method.ts', `export class C {\n  m(): number {\n    let total = 0\n${body(130)}\n    return total\n  }\n}\n`)
  write('packages/x/src/arrow.ts', `export const arrow = (): number => {\n  let total = 0\n${body(119)}\n  return total\n}\n`)
  write('packages/x/src/long.test.ts', `export function inTest(): number {\n  let total = 0\n${body(200)}\n  return total\n}\n`)
  write('packages/x/src/a.ts', "import { b } from './b.js'\nexport const a = () => b\n")
  write('packages/x/src/b.ts', "import type { C } from './dir/c.js'\nexport const b = 1 as unknown as C\n")
  write('packages/x/src/dir/c.ts', "export { a } from '../a.js'\nexport type C = number\n")
  write('packages/x/src/leaf.ts', "import { a } from './a.js'\nexport const leaf = a\n")

  it('lists a long function, method or arrow with its length, and leaves test files out', () => {
    expect(longFunctions(120, root).map((f) => [f.file, f.name, f.lines])).toEqual([
      ['packages/x/src/long.ts', 'long', 144],
      ['packages/x/src/method.ts', 'm', 134],
      ['packages/x/src/arrow.ts', 'arrow', 123],
    ])
  })

  write(
    'packages/x/src/params.ts',
    [
      'export function six(a: number, b: number, c: number, d: number, e: number, f: number) { return a + b + c + d + e + f }',
      'export function five(this: unknown, a: number, b: number, c: number, d: number, e: number) { return a + b + c + d + e }',
      'export const arrow = (a: number, b: number, c: number, d: number, e: number, ...rest: number[]) => a + b + c + d + e + rest.length',
      'export class K { constructor(a: 1, b: 2, c: 3, d: 4, e: 5, f: 6, g: 7) {} }',
      'export interface I { m(a: 1, b: 2, c: 3, d: 4, e: 5, f: 6): void }',
      'export function options({ a, b, c, d, e, f }: Record<string, number>) { return a }',
    ].join('\n'),
  )
  write('packages/x/src/params.test.ts', 'export function inTest(a: 1, b: 2, c: 3, d: 4, e: 5, f: 6) {}\n')

  it('lists functions, arrows, constructors and interface methods past five positional parameters, not `this`, not tests', () => {
    expect(longParameterLists(5, root).map((f) => [f.file, f.name, f.params])).toEqual([
      ['packages/x/src/params.ts', 'constructor', 7],
      ['packages/x/src/params.ts', 'six', 6],
      ['packages/x/src/params.ts', 'arrow', 6],
      ['packages/x/src/params.ts', 'm', 6],
    ])
  })

  it('finds a circle through a type-only import and a re-export, and not the file that only imports it', () => {
    expect(importCircles(root)).toEqual([['packages/x/src/a.ts', 'packages/x/src/b.ts', 'packages/x/src/dir/c.ts']])
  })
})
