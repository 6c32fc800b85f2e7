// The figures the project holds its shape to, from the tree as it is: `node .ci/shape-counts.mjs` prints one line per
// figure. Non-test lines exclude tests, test helpers, fixtures, cases and README samples (files that do not ship).
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { importCircles, repoRoot, sourceFiles } from './code-shape.mjs'

const require = createRequire(import.meta.url)
const ts = require('typescript')

const isSample = (file) => /(^|\/)(readme[^/]*-example|docs-example)\.[cm]?ts$/.test(file)
const shipped = sourceFiles().filter((file) => !isSample(file) && /\.[cm]?ts$/.test(file))
const text = (file) => readFileSync(join(repoRoot, file), 'utf8')
const lines = (file) => text(file).split('\n').length - (text(file).endsWith('\n') ? 1 : 0)
const linesOf = (pkg) => shipped.filter((f) => f.startsWith(`packages/${pkg}/`)).reduce((n, f) => n + lines(f), 0)

/** Functions (declarations, methods, arrows, constructors) whose own parameter list is longer than `max`. */
function longParameterLists(max) {
  const found = []
  for (const file of shipped) {
    const source = ts.createSourceFile(file, text(file), ts.ScriptTarget.Latest, true)
    const visit = (node) => {
      if (ts.isFunctionLike(node) && node.parameters && node.parameters.length > max && !ts.isFunctionTypeNode(node)) {
        const { line } = source.getLineAndCharacterOfPosition(node.getStart(source))
        found.push(`${file}:${line + 1} (${node.parameters.length})`)
      }
      ts.forEachChild(node, visit)
    }
    visit(source)
  }
  return found
}

/**
 * Exported functions named `…Model` that make middleware (the model twin of a layer factory): their declared return
 * type names a middleware or a layer, or is not declared. A function that wraps a model and returns a model
 * (`shallotModel(model): LanguageModel`, `aiSdkModel(model): ModelAdapter`) is not one.
 */
function modelTwins() {
  const twins = []
  for (const dir of readdirSync(join(repoRoot, 'packages'))) {
    const index = join(repoRoot, 'packages', dir, 'src', 'index.ts')
    try {
      statSync(index)
    } catch {
      continue
    }
    const names = [...readFileSync(index, 'utf8').matchAll(/\b([a-z][A-Za-z]*Model)\b/g)].map((m) => m[1])
    for (const name of new Set(names)) {
      // The return type is what follows the parameter list's `): ` up to the body's ` {` on the declaration's line.
      const declaration = new RegExp(
        `export (?:async )?function ${name}\\b.*?\\)(?:: ([^{]+))? \\{$|export const ${name} = (?:\\(|async|function)`,
        'm',
      )
      const makesMiddleware = shipped
        .filter((f) => f.startsWith(`packages/${dir}/`))
        .some((f) => {
          const found = declaration.exec(text(f))
          return found !== null && (found[1] === undefined || /Middleware|Layer/.test(found[1]))
        })
      if (makesMiddleware) twins.push(`${dir}: ${name}`)
    }
  }
  return twins
}

const decisions = (() => {
  try {
    return readdirSync(join(repoRoot, 'docs', 'decisions')).filter((f) => /^\d+.*\.md$/.test(f)).length
  } catch {
    return 0
  }
})()
const over300 = shipped.filter((f) => lines(f) > 300)
const manyParams = longParameterLists(5)
const getters = shipped.filter((f) => text(f).includes('__defineGetter__'))
const twins = modelTwins()
const circles = importCircles()
const total = shipped.reduce((n, f) => n + lines(f), 0)

const rows = [
  ['core non-test lines (≤ 5,000)', linesOf('core')],
  ['agent non-test lines (≤ 3,000)', linesOf('agent')],
  ['packages/*/src non-test lines', total],
  ['non-test files over 300 lines', over300.length, over300],
  ['functions with more than five positional parameters', manyParams.length, manyParams],
  ['files using __defineGetter__', getters.length, getters],
  ['exported *Model middleware factories', twins.length, twins],
  ['file-level import circles', circles.length, circles.map((c) => c.join(' → '))],
  ['decision files in docs/decisions', decisions],
]
for (const [label, value, detail] of rows) {
  console.log(`${label}: ${value}`)
  if (process.argv.includes('--detail') && Array.isArray(detail)) for (const d of detail) console.log(`  ${d}`)
}
