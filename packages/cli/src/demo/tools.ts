import { type Clock, defineTool, ToolError } from '@shallot/core'
import { z } from 'zod'

/** Counts executions per tool, so the summary can say what really ran. */
export type Executions = Map<string, number>

const count = (executions: Executions, name: string) => executions.set(name, (executions.get(name) ?? 0) + 1)

/** The demo's small world: a project on disk, a docs search that flakes, a payment API that hangs, a status page that is down. */
export function demoTools(clock: Clock, executions: Executions) {
  const files = new Map([
    ['src/main.rs', 'fn main() {\n    let order = load("ORD-2026-00042").unwrap();\n    refund(order);\n}'],
    ['Cargo.toml', '[package]\nname = "billing"'],
  ])
  let searchCalls = 0
  const charges: string[] = []

  const readFile = defineTool({
    name: 'read_file',
    description: 'Read a UTF-8 text file from the project',
    input: z.object({ path: z.string().min(1) }),
    effect: 'read',
    execute: ({ path }) => {
      count(executions, 'read_file')
      const text = files.get(path)
      if (text === undefined) throw new ToolError('not_found', `file ${path} not found`, { hint: `files: ${[...files.keys()].join(', ')}` })
      return text
    },
  })

  const searchDocs = defineTool({
    name: 'search_docs',
    description: 'Search the internal docs',
    input: z.object({ query: z.string() }),
    effect: 'read',
    execute: async ({ query }, { signal }) => {
      count(executions, 'search_docs')
      searchCalls++
      await clock.sleep(40, signal)
      if (searchCalls <= 2) throw Object.assign(new Error('Service Unavailable'), { status: 503 })
      return `1 result for "${query}": refunds must reuse the original charge id`
    },
  })

  const chargeCard = defineTool({
    name: 'charge_card',
    description: 'Charge (or refund, with a negative amount) a card for an order',
    input: z.object({ order: z.string().regex(/^ORD-\d{4}-\d{5}$/), amountCents: z.number().int() }),
    effect: 'write',
    execute: async ({ order, amountCents }, { signal }) => {
      count(executions, 'charge_card')
      // The payment provider applies the charge, then its response hangs.
      charges.push(`${order}:${amountCents}`)
      await clock.sleep(60_000, signal)
      return { ok: true }
    },
  })

  const statusPage = defineTool({
    name: 'status_page',
    description: 'Read the live status page of a service',
    input: z.object({ service: z.string() }),
    effect: 'read',
    execute: async (_args, { signal }) => {
      count(executions, 'status_page')
      await clock.sleep(60_000, signal)
      return 'unreachable'
    },
  })

  const statusCache = defineTool({
    name: 'status_cache',
    description: 'Read the last cached status of a service (may be minutes old)',
    input: z.object({ service: z.string() }),
    effect: 'read',
    execute: ({ service }) => {
      count(executions, 'status_cache')
      return `${service}: degraded (cached 4 min ago)`
    },
  })

  return { tools: [readFile, searchDocs, chargeCard, statusPage, statusCache], charges }
}
