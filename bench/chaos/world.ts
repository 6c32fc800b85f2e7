// The world the soak's agents act on, in PostgreSQL beside shallot's own tables (one database, so a
// failover that loses commits rolls the world back with the stores): every side effect is written by
// the tool itself into the ledger, and every request a run makes of the world (a model call, a quote,
// a write) is recorded with the drive that made it, in the order the world saw them. The checker
// reads what happened, not what the agent believed.
import { randomUUID } from 'node:crypto'
import { type AnyTool, defineTool, type ModelAdapter, type ModelRequest, ToolError } from '@shallot/core'
import type pg from 'pg'
import { z } from 'zod'
import type { Plant, RunPlan } from './schedule.js'

export const REFUND_CENTS = 300
export const CHARGE_CENTS = 500

/** The soak's own tables: the ledger, the keys the idempotency layer issued, the world's requests, the operator's answers, first-time answers. */
export function worldTables(prefix: string): string[] {
  return [
    `CREATE TABLE IF NOT EXISTS ${prefix}ledger (id serial PRIMARY KEY, run_id text NOT NULL, tool text NOT NULL, call_id text NOT NULL,
      idem_key text, args text NOT NULL, driver text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())`,
    `CREATE TABLE IF NOT EXISTS ${prefix}issued (id serial PRIMARY KEY, run_id text NOT NULL, tool text NOT NULL, args text NOT NULL, idem_key text NOT NULL)`,
    `CREATE TABLE IF NOT EXISTS ${prefix}acts (id bigserial PRIMARY KEY, run_id text NOT NULL, driver text NOT NULL, what text NOT NULL, turn int,
      at timestamptz NOT NULL DEFAULT clock_timestamp())`,
    `CREATE TABLE IF NOT EXISTS ${prefix}approvals (id serial PRIMARY KEY, run_id text NOT NULL, call_id text NOT NULL, tool text NOT NULL,
      args text NOT NULL, answer text NOT NULL, pid int NOT NULL)`,
    `CREATE TABLE IF NOT EXISTS ${prefix}first (kind text NOT NULL, run_id text NOT NULL, PRIMARY KEY (kind, run_id))`,
  ]
}

export interface WorldOptions {
  readonly pool: pg.Pool
  readonly prefix: string
  /** How long a write holds its worker after its effect (a worker killed then dies between the effect and its record). */
  readonly holdMs: number
  /** The quote's and the model's pushback, longer than the park threshold. */
  readonly retryAfterMs: number
  /** The drive of this process that holds the run now, as the claim gave it. */
  readonly driverOf: (runId: string) => string
  /** The misbehaviour of a planted run's tools and model. */
  readonly plant?: Plant
}

const unavailable = (what: string, safeToRepeat: boolean, cause: unknown) =>
  new ToolError('upstream_error', `${what} is unavailable`, { category: 'transient', retryable: true, safeToRepeat, cause })

const never = () => new Promise<never>(() => {})

/** True the first time `kind` is asked for `runId`, fleet-wide; false after, or when the database cannot say. */
async function firstTime({ pool, prefix }: WorldOptions, kind: string, runId: string): Promise<boolean> {
  const sql = `INSERT INTO ${prefix}first (kind, run_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`
  return (await pool.query(sql, [kind, runId]).catch(() => ({ rowCount: 0 }))).rowCount === 1
}

/**
 * Planted: a tool that sends each request under a key of its own, and sends the write again when the
 * first answer is lost (here: always). A request that fails for real is sent again too, until two landed.
 */
async function sendTwice(write: (key: string) => Promise<unknown>): Promise<void> {
  for (let landed = 0, tries = 0; landed < 2; tries++) {
    try {
      await write(`own-${randomUUID()}`)
      landed++
    } catch (err) {
      if (tries > 50) throw err
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
  }
}

/** One effect, recorded by the tool in the same statement as the request: its run, call, key, arguments and drive. */
function writeTool(world: WorldOptions, name: string): AnyTool {
  const { pool, prefix, holdMs, plant } = world
  const sql = `WITH l AS (INSERT INTO ${prefix}ledger (run_id, tool, call_id, idem_key, args, driver) VALUES ($1, $2, $3, $4, $5, $6) RETURNING run_id, driver)
    INSERT INTO ${prefix}acts (run_id, driver, what) SELECT run_id, driver, 'write' FROM l`
  return defineTool({
    name,
    description: `${name} for an order`,
    input: z.object({ order: z.string(), cents: z.number().int() }),
    effect: 'write',
    execute: async (args, { call, idempotencyKey }) => {
      const write = (key: string | null) =>
        pool.query(sql, [args.order, name, call.id.slice(0, 200), key, JSON.stringify(args), world.driverOf(args.order)])
      try {
        if (plant === 'own_key') await sendTwice(write)
        else await write(idempotencyKey ?? null)
      } catch (err) {
        // The insert may have committed before the connection broke: not safe to repeat.
        throw unavailable('the ledger', false, err)
      }
      // Planted: the worker dies between the effect and its record, once per run.
      if ((plant === 'key_on_resume' || plant === 'forgetful_store') && (await firstTime(world, 'crash', args.order)))
        process.kill(process.pid, 'SIGKILL')
      // The world saw the effect; a worker killed now dies between the effect and its record.
      await new Promise((resolve) => setTimeout(resolve, holdMs))
      return `${name} ${args.cents} for ${args.order}`
    },
  })
}

export function worldTools(world: WorldOptions): AnyTool[] {
  const { pool, prefix, retryAfterMs } = world
  const lookup = defineTool({
    name: 'lookup_order',
    description: 'Look an order up; in a plan with hangTool its first lookup never answers',
    input: z.object({ order: z.string(), hang: z.boolean().optional() }),
    effect: 'read',
    execute: async ({ order, hang }) => {
      if (hang === true && (await firstTime(world, 'hang_tool', order))) return never()
      return `order ${order}: open`
    },
  })
  const quoteSql = `WITH f AS (INSERT INTO ${prefix}first (kind, run_id) VALUES ('quote', $1) ON CONFLICT DO NOTHING RETURNING 1),
    a AS (INSERT INTO ${prefix}acts (run_id, driver, what) VALUES ($1, $2, 'quote'))
    SELECT count(*)::int AS fresh FROM f`
  const quote = defineTool({
    name: 'fx_quote',
    description: 'Quote an exchange rate; its first answer per order is a 429',
    input: z.object({ order: z.string() }),
    effect: 'read',
    execute: async ({ order }) => {
      let fresh: number
      try {
        fresh = (await pool.query<{ fresh: number }>(quoteSql, [order, world.driverOf(order)])).rows[0]?.fresh ?? 0
      } catch (err) {
        throw unavailable('the FX API', true, err)
      }
      if (fresh === 1) {
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
  return [lookup, quote, writeTool(world, 'charge_card'), writeTool(world, 'refund_payment')]
}

/** Resolves once two drives asked the model for `runId`'s first turn, or after ten seconds. */
async function bothAsked({ pool, prefix }: WorldOptions, runId: string): Promise<void> {
  const sql = `SELECT count(DISTINCT driver)::int AS n FROM ${prefix}acts WHERE run_id = $1 AND what = 'model'`
  for (let waited = 0; waited < 10_000; waited += 100) {
    const asked = await pool.query<{ n: number }>(sql, [runId]).then(
      ({ rows }) => rows[0]?.n ?? 0,
      () => 0,
    )
    if (asked >= 2) return
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
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
 * `model429` answers 429 with `retryAfterMs` to its first request in each process; one with
 * `hangModel` never answers its first request in the fleet.
 */
export function worldModel(world: WorldOptions): ModelAdapter {
  const { pool, prefix, retryAfterMs, plant } = world
  const pushedBack = new Set<string>()
  const actSql = `INSERT INTO ${prefix}acts (run_id, driver, what, turn) VALUES ($1, $2, 'model', $3)`
  return {
    name: 'scripted',
    async generate({ messages }) {
      const plan = planOf(messages)
      const order = plan.runId
      const results = messages.filter((m) => m.role === 'tool')
      const turn = messages.filter((m) => m.role === 'assistant').length + 1
      if (plan.hangModel === true && (await firstTime(world, 'hang_model', order))) return never()
      if (plan.model429 && !pushedBack.has(order)) {
        pushedBack.add(order)
        throw new ToolError('rate_limited', 'the model provider answered 429 Too Many Requests', {
          category: 'transient',
          retryable: true,
          safeToRepeat: true,
          retryAfterMs,
        })
      }
      // Answered requests only, so a turn asked twice means two drives (or a redone turn) asked. Recorded
      // before the answer, so the drive's next request comes after it; a request the database cannot
      // record is answered all the same (the history then misses it, which can hide an overlap, never make one).
      await pool.query(actSql, [order, world.driverOf(order), turn]).catch(() => {})
      // Planted: the first answer waits until both drives of a run whose worker ignores the claim have asked, so they overlap.
      if (plant === 'ignore_claim' && turn === 1) await bothAsked(world, order)
      if (results.length === 0) {
        const calls = [
          { id: 'lookup', name: 'lookup_order', args: plan.hangTool === true ? { order, hang: true } : { order } },
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
