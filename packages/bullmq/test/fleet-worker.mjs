// A worker process for src/fleet.processes.test.ts: one BullMQ worker of agent runs on the BUILT
// packages (dist), as a deployment would. Usage: node fleet-worker.mjs '<json config>'.
// The world lives in PostgreSQL: `charges` gets one row per card charge (a write tool), `quotes` one
// row per run the first time it asks for a quote, which answers 429 with a long Retry-After.
// Prints "ready" once the worker runs, then one JSON line per agent call: { runId, call, start, end, status, wokeAt?, wakeAt?, waitMs? }.
import { AsyncLocalStorage } from 'node:async_hooks'
import { createAgent } from '@shallot/agent'
import { agentWorker } from '@shallot/bullmq'
import { defineTool, ToolError } from '@shallot/core'
import { idempotency } from '@shallot/idempotency'
import { retry } from '@shallot/retry'
import { postgresStores } from '@shallot/store-postgres'
import pg from 'pg'
import { z } from 'zod'

const config = JSON.parse(process.argv[2])
const pool = new pg.Pool({ connectionString: config.pgUrl, max: 8, connectionTimeoutMillis: 10_000 })
pool.on('error', () => {})
// A killed worker's claims on its runs lapse with its job lock, so its runs are taken over as soon as BullMQ hands them on.
const stores = postgresStores({ pool, tablePrefix: config.tablePrefix, timeoutMs: 20_000, claimLeaseMs: config.lockDuration })
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

const charge = defineTool({
  name: 'charge_card',
  description: 'Charge the card of an order',
  input: z.object({ order: z.string(), cents: z.number().int() }),
  effect: 'write',
  execute: async ({ order, cents }) => {
    await pool.query(`INSERT INTO ${config.tablePrefix}charges (run_id, cents, pid) VALUES ($1, $2, $3)`, [order, cents, process.pid])
    await sleep(config.holdMs) // the world saw the charge; the worker may die before the record says so
    return `charged ${cents} for ${order}`
  },
})
const quote = defineTool({
  name: 'fx_quote',
  description: 'Quote an exchange rate',
  input: z.object({ order: z.string() }),
  effect: 'read',
  execute: async ({ order }) => {
    const first = await pool.query(`INSERT INTO ${config.tablePrefix}quotes (run_id) VALUES ($1) ON CONFLICT DO NOTHING`, [order])
    if (first.rowCount === 1) {
      throw new ToolError('rate_limited', 'the FX API is rate limiting (429)', {
        category: 'transient',
        retryable: true,
        safeToRepeat: true,
        retryAfterMs: config.waitMs,
      })
    }
    return `1 EUR = 1.08 USD for ${order}`
  },
})

/** A model without memory of its own: what it says follows from the transcript, so any worker can continue a run. */
const model = {
  name: 'scripted',
  async generate({ messages }) {
    const order = messages[0].content
    if (!messages.some((m) => m.role === 'tool')) {
      return {
        toolCalls: [
          { id: 'charge', name: 'charge_card', args: { order, cents: 500 } },
          { id: 'quote', name: 'fx_quote', args: { order } },
        ],
      }
    }
    const results = messages.filter((m) => m.role === 'tool').map((m) => `${m.name}:${m.ok ? 'ok' : 'failed'}`)
    return { text: results.join(' ') }
  },
}

// The agent's wall clock, read through a recorder: each agent call notes the last time it read it, which for a
// resume of a parked run is the moment it compared wakeAt with now (parked again, or waited out the rest and went
// on). The time the call started is earlier by however long the claim and the checkpoint load took.
const call = new AsyncLocalStorage()
const wallNow = () => {
  const now = Date.now()
  const reads = call.getStore()
  if (reads !== undefined) reads.wokeAt = now
  return now
}

const inner = createAgent({
  model,
  tools: [charge, quote],
  middleware: [
    idempotency({ store: stores.idempotency, leaseMs: config.leaseMs, waitMs: config.leaseMs * 2 }),
    // Waits out pushback up to 200 ms; a longer Retry-After goes back to the agent, which parks.
    retry({ capMs: 200, baseMs: 50, retryBudget: false }),
  ],
  checkpoints: stores.checkpoints,
  park: { afterMs: config.parkAfterMs, wallNow },
})

// The agent as the worker sees it, timed: how long each run or resume held this worker.
const timed =
  (name) =>
  async (...args) => {
    const start = Date.now()
    const runId = name === 'run' ? args[0].runId : args[0]
    process.stdout.write(`${JSON.stringify({ runId, call: name, start, status: 'started' })}\n`)
    const reads = {}
    const outcome = await call.run(reads, () => inner[name](...args))
    const line = { runId, call: name, start, end: Date.now(), status: outcome.status }
    if (reads.wokeAt !== undefined) line.wokeAt = reads.wokeAt
    if (outcome.status === 'parked') Object.assign(line, { wakeAt: outcome.wakeAt, waitMs: outcome.reason.waitMs })
    if (outcome.status === 'completed') line.output = outcome.output
    process.stdout.write(`${JSON.stringify(line)}\n`)
    return outcome
  }
const agent = { stack: inner.stack, run: timed('run'), resume: timed('resume') }

const worker = agentWorker({
  name: config.queue,
  connection: { host: '127.0.0.1', port: config.redisPort, maxRetriesPerRequest: null },
  agent,
  checkpoints: stores.checkpoints,
  concurrency: config.concurrency,
  lockDuration: config.lockDuration,
  stalledInterval: config.stalledInterval,
  maxStalledCount: 3,
})
await worker.worker.waitUntilReady()
process.stdout.write('ready\n')
process.on('SIGTERM', async () => {
  await worker.close()
  await pool.end()
  process.exit(0)
})
