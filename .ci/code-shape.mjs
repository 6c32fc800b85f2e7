// The code's shape, measured from packages/*/src: every non-test function longer than a limit, every function
// with more than five positional parameters, and every file-level import circle. `node .ci/code-shape.mjs [maxLines]`
// prints all three (default 120 lines); packages/shallot's code-shape.test.ts holds the code to them.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const require = createRequire(import.meta.url)
const ts = require('typescript')

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..')

/** Test files, test helpers, fixtures and test-only folders: not the product's source. */
export function isTestFile(path) {
  return /\.(test|test-d|node22\.test|test-helper|fixture|cases)\.[cm]?[jt]s$/.test(path) || /(^|\/)test-support\//.test(path)
}

/** Every non-test .ts/.mts/.js/.mjs source file under packages/<name>/src, as paths relative to the repository. */
export function sourceFiles(root = repoRoot) {
  const files = []
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name)
      if (entry.isDirectory()) {
        if (entry.name !== 'node_modules') walk(path)
      } else if (/\.([cm]?ts|[cm]?js)$/.test(entry.name) && !entry.name.endsWith('.d.ts')) {
        const rel = relative(root, path).split('\\').join('/')
        if (!isTestFile(rel)) files.push(rel)
      }
    }
  }
  const packages = join(root, 'packages')
  for (const name of readdirSync(packages).sort()) {
    const src = join(packages, name, 'src')
    if (existsSync(src) && statSync(src).isDirectory()) walk(src)
  }
  return files.sort()
}

// Each file parsed once per process: both checks read the same trees.
const parsed = new Map()
function parse(root, file) {
  const path = join(root, file)
  let source = parsed.get(path)
  if (source === undefined) {
    source = ts.createSourceFile(file, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true)
    parsed.set(path, source)
  }
  return source
}

function nameOf(node, source) {
  if (node.name) return node.name.getText(source)
  if (ts.isConstructorDeclaration(node)) return 'constructor'
  const parent = node.parent
  if (parent && ts.isVariableDeclaration(parent)) return parent.name.getText(source)
  if (parent && (ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent))) return parent.name.getText(source)
  if (parent && ts.isExportAssignment(parent)) return 'default'
  return '(anonymous)'
}

/** Functions, arrows, methods, accessors and constructors longer than maxLines lines, longest first. */
export function longFunctions(maxLines = 120, root = repoRoot) {
  const found = []
  for (const file of sourceFiles(root)) {
    const source = parse(root, file)
    const visit = (node) => {
      if (ts.isFunctionLike(node) && node.body) {
        const start = source.getLineAndCharacterOfPosition(node.getStart(source)).line
        const end = source.getLineAndCharacterOfPosition(node.getEnd()).line
        const lines = end - start + 1
        if (lines > maxLines) found.push({ file, line: start + 1, name: nameOf(node, source), lines })
      }
      ts.forEachChild(node, visit)
    }
    visit(source)
  }
  return found.sort((a, b) => b.lines - a.lines || a.file.localeCompare(b.file))
}

/**
 * Functions, arrows, methods (method signatures of interfaces too) and constructors taking more than maxParams
 * positional parameters (a `this` parameter is not one), most first. Six or more want an options object.
 */
export function longParameterLists(maxParams = 5, root = repoRoot) {
  const found = []
  for (const file of sourceFiles(root)) {
    const source = parse(root, file)
    const visit = (node) => {
      if (
        ts.isFunctionDeclaration(node) ||
        ts.isFunctionExpression(node) ||
        ts.isArrowFunction(node) ||
        ts.isMethodDeclaration(node) ||
        ts.isMethodSignature(node) ||
        ts.isConstructorDeclaration(node)
      ) {
        const params = node.parameters.filter((p) => !(ts.isIdentifier(p.name) && p.name.text === 'this')).length
        if (params > maxParams) {
          const line = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1
          found.push({ file, line, name: nameOf(node, source), params })
        }
      }
      ts.forEachChild(node, visit)
    }
    visit(source)
  }
  return found.sort((a, b) => b.params - a.params || a.file.localeCompare(b.file) || a.line - b.line)
}

function importedSpecifiers(source) {
  const specifiers = []
  const visit = (node) => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      specifiers.push(node.moduleSpecifier.text)
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const [arg] = node.arguments
      if (arg && ts.isStringLiteralLike(arg)) specifiers.push(arg.text)
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      specifiers.push(node.argument.literal.text)
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return specifiers
}

function resolveRelative(from, specifier, known) {
  if (!specifier.startsWith('.')) return undefined
  const base = join(dirname(from), specifier).split('\\').join('/')
  const stem = base.replace(/\.([cm]?js)$/, '')
  const candidates = [base, `${stem}.ts`, `${stem}.mts`, `${stem}.cts`, `${stem}.js`, `${stem}.mjs`, `${base}/index.ts`]
  return candidates.find((candidate) => known.has(candidate))
}

/** The file-level import graph of the non-test sources (type-only imports included), as file -> files it imports. */
export function importGraph(root = repoRoot) {
  const files = sourceFiles(root)
  const known = new Set(files)
  const graph = new Map()
  for (const file of files) {
    const targets = new Set()
    for (const specifier of importedSpecifiers(parse(root, file))) {
      const target = resolveRelative(file, specifier, known)
      if (target) targets.add(target)
    }
    graph.set(file, [...targets].sort())
  }
  return graph
}

/** Every import circle: the strongly connected components of more than one file (or a file importing itself). */
export function importCircles(root = repoRoot) {
  const graph = importGraph(root)
  const index = new Map()
  const low = new Map()
  const onStack = new Set()
  const stack = []
  const circles = []
  let next = 0
  const connect = (file) => {
    index.set(file, next)
    low.set(file, next)
    next++
    stack.push(file)
    onStack.add(file)
    for (const target of graph.get(file) ?? []) {
      if (!index.has(target)) {
        connect(target)
        low.set(file, Math.min(low.get(file), low.get(target)))
      } else if (onStack.has(target)) {
        low.set(file, Math.min(low.get(file), index.get(target)))
      }
    }
    if (low.get(file) !== index.get(file)) return
    const component = []
    let member
    do {
      member = stack.pop()
      onStack.delete(member)
      component.push(member)
    } while (member !== file)
    if (component.length > 1 || (graph.get(file) ?? []).includes(file)) circles.push(component.sort())
  }
  for (const file of graph.keys()) if (!index.has(file)) connect(file)
  return circles.sort((a, b) => a[0].localeCompare(b[0]))
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const maxLines = Number(process.argv[2] ?? 120)
  const long = longFunctions(maxLines)
  console.log(`${long.length} non-test function(s) over ${maxLines} lines:`)
  for (const f of long) console.log(`  ${String(f.lines).padStart(4)}  ${f.file}:${f.line}  ${f.name}`)
  const positional = longParameterLists()
  console.log(`${positional.length} non-test function(s) with more than 5 positional parameters:`)
  for (const f of positional) console.log(`  ${String(f.params).padStart(4)}  ${f.file}:${f.line}  ${f.name}`)
  const circles = importCircles()
  console.log(`${circles.length} file-level import circle(s):`)
  for (const circle of circles) console.log(`  ${circle.join(' <-> ')}`)
}
