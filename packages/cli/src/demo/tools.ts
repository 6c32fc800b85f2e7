import { type Clock, defineTool, ToolError } from '@shallot/core'
import { z } from 'zod'

/** A charge (or refund) as the payment provider keeps it. */
interface Charge {
  id: string
  order: string
  amountCents: number
}

/** Counts executions per tool, so the summary can say what really ran. */
export type Executions = Map<string, number>

const count = (executions: Executions, name: string) => executions.set(name, (executions.get(name) ?? 0) + 1)

/** The demo's small world: a project on disk, a docs search that flakes, a payment API that hangs after it applied a charge (and can look it up), a status page that is down. */
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

  // The payment provider's ledger: each charge under the reference it was sent with, so it can be looked up.
  const ledger = new Map<string, Charge>()
  const lookUp = async (reference: string, signal: AbortSignal): Promise<Charge | undefined> => {
    await clock.sleep(120, signal)
    return ledger.get(reference)
  }

  const findCharge = defineTool({
    name: 'find_charge',
    description: 'Look up a charge or refund by the reference it was sent with',
    input: z.object({ reference: z.string().min(1) }),
    effect: 'read',
    execute: async ({ reference }, { signal }) => {
      count(executions, 'find_charge')
      return (await lookUp(reference, signal)) ?? `no charge with reference ${reference}`
    },
  })

  const chargeCard = defineTool({
    name: 'charge_card',
    description: 'Charge (or refund, with a negative amount) a card for an order',
    input: z.object({ order: z.string().regex(/^ORD-\d{4}-\d{5}$/), amountCents: z.number().int() }),
    effect: 'write',
    execute: async ({ order, amountCents }, { signal, idempotencyKey }) => {
      count(executions, 'charge_card')
      // The payment provider applies the charge under the call's key, then its response hangs.
      const charge: Charge = { id: `${amountCents < 0 ? 're' : 'ch'}_${ledger.size + 1}`, order, amountCents }
      ledger.set(idempotencyKey ?? `${order}:${amountCents}`, charge)
      charges.push(`${order}:${amountCents}`)
      await clock.sleep(60_000, signal)
      return charge
    },
    // After an unknown outcome, idempotency() asks the provider's lookup whether the charge landed.
    reconcile: async (_args, { idempotencyKey, signal }) => {
      const charge = idempotencyKey === undefined ? undefined : await lookUp(idempotencyKey, signal)
      return charge === undefined ? { status: 'not_applied' } : { status: 'applied', result: charge }
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

  return { tools: [readFile, searchDocs, chargeCard, findCharge, statusPage, statusCache], charges }
}
