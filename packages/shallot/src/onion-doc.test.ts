import { readFileSync } from 'node:fs'
import { builtinMiddleware, builtins } from '@shallot/config'
import type { MiddlewareDefinition } from '@shallot/core'
import { describe, expect, it } from 'vitest'
// Not dependencies of the umbrella package: read from their sources, as bullmq's tests read the stores'.
import { otelDefinition } from '../../otel/src/definition.js'
import { policyDefinition } from '../../policy/src/definition.js'
import { DEFAULT_MODEL_ORDER } from './default-model-middleware.js'

// docs/onion.md, "Both onions": a picture of the two stacks and a table of which calls each package
// wraps. Both are prose a reader trusts, so both are held here to what the code says.

const page = readFileSync(new URL('../../../docs/onion.md', import.meta.url), 'utf8')
const section = page.slice(page.indexOf('## Both onions'))

interface Column {
  /** Every layer in the picture's column, outermost first. */
  readonly all: string[]
  /** The numbered ones, outermost first: the default stack. */
  readonly defaults: string[]
}

/** The picture's two columns: model onion on the left, tool onion on the right. */
function picture(): { model: Column; tool: Column } {
  const fence = section.indexOf('```')
  const lines = section.slice(fence + 3, section.indexOf('```', fence + 3)).split('\n')
  const header = lines.find((line) => line.includes('TOOL ONION')) ?? ''
  const split = header.indexOf('TOOL ONION') - 3
  const model: Column = { all: [], defaults: [] }
  const tool: Column = { all: [], defaults: [] }
  for (const line of lines) {
    for (const [column, text] of [
      [model, line.slice(0, split)],
      [tool, line.slice(split)],
    ] as const) {
      const row = /^ {3}([1-9 ]) {2}([a-z][a-z-]*) {2,}/.exec(text)
      if (row === null) continue
      column.all.push(row[2] as string)
      if (row[1] !== ' ') {
        expect(Number(row[1]), `${row[2]} is numbered in order`).toBe(column.defaults.length + 1)
        column.defaults.push(row[2] as string)
      }
    }
  }
  return { model, tool }
}

/** The table's rows: package name (without the scope) → [tool calls, model calls]. */
function table(): Map<string, { tools: boolean; models: boolean }> {
  const rows = new Map<string, { tools: boolean; models: boolean }>()
  for (const match of section.matchAll(/^\| `@shallot\/([a-z-]+)` \| (yes|no)\b[^|]* \| (yes|no)\b[^|]* \|$/gm)) {
    rows.set(match[1] as string, { tools: match[2] === 'yes', models: match[3] === 'yes' })
  }
  return rows
}

const definitions: MiddlewareDefinition[] = [
  ...builtins.map((b) => b.definition),
  otelDefinition as MiddlewareDefinition,
  policyDefinition as MiddlewareDefinition,
]

describe('docs/onion.md, both onions', () => {
  it("numbers the default stacks' layers in their real order", () => {
    const { model, tool } = picture()
    // DEFAULT_MODEL_ORDER names the options (circuitBreaker); the picture names the packages.
    const kebab = (name: string) => name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)
    expect(model.defaults).toEqual(DEFAULT_MODEL_ORDER.map(kebab))
    expect(tool.defaults).toEqual(builtins.filter((b) => b.inDefaultStack).map((b) => b.definition.name))
  })

  it("places the tool onion's built-ins in @shallot/config's order, and lists in each column only layers that wrap that call", () => {
    const { model, tool } = picture()
    const builtinNames = builtinMiddleware.map((d) => d.name)
    expect(tool.all.filter((name) => builtinNames.includes(name))).toEqual(builtinNames)
    const byName = new Map(definitions.map((d) => [d.name, d]))
    for (const name of tool.all) expect(byName.get(name)?.handles.tools, `${name} in the tool onion`).toBe(true)
    for (const name of model.all) expect(byName.get(name)?.handles.models, `${name} in the model onion`).toBe(true)
  })

  it("says for every layer package which calls it wraps, as its definition's handles say", () => {
    const rows = table()
    expect([...rows.keys()].sort()).toEqual(definitions.map((d) => d.name).sort())
    for (const definition of definitions) {
      expect(rows.get(definition.name), definition.name).toEqual({
        tools: definition.handles.tools,
        models: definition.handles.models,
      })
    }
  })
})
