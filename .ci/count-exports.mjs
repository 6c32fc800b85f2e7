// Counts the names each workspace package exports from its built dist/index.d.ts (values and types).
import { existsSync, readdirSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'

const require = createRequire(join(process.cwd(), 'package.json'))
const ts = require('typescript')
const root = process.argv[2] ?? process.cwd()
const rows = []
for (const dir of readdirSync(join(root, 'packages')).sort()) {
  const entry = join(root, 'packages', dir, 'dist', 'index.d.ts')
  if (!existsSync(entry)) continue
  const program = ts.createProgram([entry], {
    noEmit: true,
    skipLibCheck: true,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
  })
  const checker = program.getTypeChecker()
  const symbol = checker.getSymbolAtLocation(program.getSourceFile(entry))
  const names = symbol ? checker.getExportsOfModule(symbol).map((s) => s.getName()) : []
  let values = 0
  for (const s of symbol ? checker.getExportsOfModule(symbol) : []) {
    const target = s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s
    if (target.flags & ts.SymbolFlags.Value) values++
  }
  rows.push([dir, names.length, values])
}
for (const [dir, all, values] of rows) console.log(`${dir.padEnd(18)} ${String(all).padStart(4)} names (${values} values)`)
