// The world the soak's agents act on, in PostgreSQL, beside shallot's own tables: every side effect
// is written by the tool itself into the ledger, so the checker reads what happened, not what the
// agent believed. Reads touch the world too (the quote's first answer is a 429), writes only the ledger.
import { type AnyTool, defineTool, type ModelAdapter, type ModelRequest, ToolError } from '@shallot/core'
import type pg from 'pg'
import { z } from 'zod'
import type { RunPlan } from './schedule.js'

export const REFUND_CENTS = 300
export const CHARGE_CENTS = 500

/** The soak's own tables: the ledger of side effects, the operator's answers, first-time answers, model calls. */
export function worldTables(prefix: string): string[] {
  return [
    `CREATE TABLE IF NOT EXISTS ${prefix}ledger (id serial PRIMARY KEY, run_id text NOT NULL, tool text NOT NULL, call_id text NOT NULL,
      idem_key text, args text NOT NULL, pid int NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())`,
    `CREATE TABLE IF NOT EXISTS ${prefix}approvals (id serial PRIMARY KEY, run_id text NOT NULL, call_id text NOT NULL, tool text NOT NULL,
      args text NOT NULL, answer text NOT NULL, pid int NOT NULL)`,
    `CREATE TABLE IF NOT EXISTS ${prefix}first (kind text NOT NULL, run_id text NOT NULL, PRIMARY KEY (kind, run_id))`,
    `CREATE TABLE IF NOT EXISTS ${prefix}model_calls (run_id text NOT NULL, turn int NOT NULL, pid int NOT NULL)`,
  ]
}

const unavailable = (what: string, safeToRepeat: boolean, cause: unknown) =>
  new ToolError('upstream_error', `${what} is unavailable`, { category: 'transient', retryable: true, safeToRepeat, cause })

/** One effect, recorded by the tool: its run, call, idempotency key and canonical arguments. */
function writeTool(pool: pg.Pool, prefix: string, name: string, holdMs: number): AnyTool {
  return defineTool({
    name,
    description: `${name} for an order`,
    input: z.object({ order: z.string(), cents: z.number().int() }),
    effect: 'write',
    execute: async (args, { call, idempotencyKey }) => {
      const row = [call.id.slice(0, 200), idempotencyKey ?? null, JSON.stringify(args), process.pid]
      try {
        await pool.query(`INSERT INTO ${prefix}ledger (run_id, tool, call_id, idem_key, args, pid) VALUES ($1, $2, $3, $4, $5, $6)`, [
          args.order,
          name,
          ...row,
        ])
      } catch (err) {
        // The insert may have committed before the connection broke: not safe to repeat.
        throw unavailable('the ledger', false, err)
      }
      // The world saw the effect; a worker killed now dies between the effect and its record.
      await new Promise((resolve) => setTimeout(resolve, holdMs))
      return `${name} ${args.cents} for ${args.order}`
    },
  })
}

export interface WorldOptions {
  readonly pool: pg.Pool
  readonly prefix: string
  readonly holdMs: number
  /** The quote's and the model's pushback, longer than the park threshold. */
  readonly retryAfterMs: number
}

export function worldTools({ pool, prefix, holdMs, retryAfterMs }: WorldOptions): AnyTool[] {
  const lookup = defineTool({
    name: 'lookup_order',
    description: 'Look an order up',
    input: z.object({ order: z.string() }),
    effect: 'read',
    execute: async ({ order }) => `order ${order}: open`,
  })
  const quote = defineTool({
    name: 'fx_quote',
    description: 'Quote an exchange rate; its first answer per order is a 429',
    input: z.object({ order: z.string() }),
    effect: 'read',
    execute: async ({ order }) => {
      let first: pg.QueryResult
      try {
        first = await pool.query(`INSERT INTO ${prefix}first (kind, run_id) VALUES ('quote', $1) ON CONFLICT DO NOTHING`, [order])
      } catch (err) {
        throw unavailable('the FX API', true, err)
      }
      if (first.rowCount === 1) {
        throw new ToolError('rate_limited', 'the FX API is rate limiting (429)', {
          category: 'transient',
          retryable: true,
          safeToRepeat: true,
          retryAfterMs,
        })
      }
      return `1 EUR = 1.08 USD for ${order}`
    },
  })
  return [lookup, quote, writeTool(pool, prefix, 'charge_card', holdMs), writeTool(pool, prefix, 'refund_payment', holdMs)]
}

/** The run's plan, which is its input: the model reads it from the first message. */
export function planOf(messages: ModelRequest['messages']): RunPlan {
  const first = messages.find((m) => m.role === 'user')
  return JSON.parse(first?.role === 'user' ? first.content : '{}') as RunPlan
}

/**
 * A model without memory: what it says follows from the transcript, so any worker can continue any
 * run. Turn 1 looks the order up, charges it and (for a parking plan) asks for a quote; turn 2 asks
 * for a refund when the plan has one; then it answers with each tool's outcome. A plan with
 * `model429` answers 429 with `retryAfterMs` to its first request in each process.
 */
export function worldModel({ pool, prefix, retryAfterMs }: WorldOptions): ModelAdapter {
  const pushedBack = new Set<string>()
  return {
    name: 'scripted',
    async generate({ messages }) {
      const plan = planOf(messages)
      const order = plan.runId
      const results = messages.filter((m) => m.role === 'tool')
      const turn = messages.filter((m) => m.role === 'assistant').length + 1
      if (plan.model429 && !pushedBack.has(order)) {
        pushedBack.add(order)
        throw new ToolError('rate_limited', 'the model provider answered 429 Too Many Requests', {
          category: 'transient',
          retryable: true,
          safeToRepeat: true,
          retryAfterMs,
        })
      }
      // Answered calls only, so a turn asked twice means two workers (or a redone turn) asked.
      pool.query(`INSERT INTO ${prefix}model_calls (run_id, turn, pid) VALUES ($1, $2, $3)`, [order, turn, process.pid]).catch(() => {})
      if (results.length === 0) {
        const calls = [
          { id: 'lookup', name: 'lookup_order', args: { order } },
          { id: 'charge', name: 'charge_card', args: { order, cents: CHARGE_CENTS } },
        ]
        if (plan.parks) calls.push({ id: 'quote', name: 'fx_quote', args: { order } })
        return { toolCalls: calls }
      }
      if (plan.refund && !results.some((m) => m.name === 'refund_payment')) {
        return { toolCalls: [{ id: 'refund', name: 'refund_payment', args: { order, cents: REFUND_CENTS } }] }
      }
      return { text: results.map((m) => `${m.name}:${m.ok ? 'ok' : 'failed'}`).join(' '), toolCalls: [] }
    },
  }
}
