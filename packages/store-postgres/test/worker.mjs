// A worker process for src/fleet.processes.test.ts. It runs the BUILT packages (dist), as a
// deployment would; the test builds them first.
// Usage: node worker.mjs '<json config>'. Prints "ready" once its stores answer, then answers each
// JSON command line on stdin with one JSON line: { id, results: [{ ok, replayed, value, code, events }] }.
// The world is the `effects` table: every charge is one row, written before the call reports back.
import { createInterface } from 'node:readline'
import { createRun, createStack, defineTool, ToolError } from '@shallot/core'
import { idempotency } from '@shallot/idempotency'
import pg from 'pg'
import { z } from 'zod'
import { postgresStores } from '../dist/index.js'

const config = JSON.parse(process.argv[2])
const pool = new pg.Pool({ connectionString: config.url, max: 5, connectionTimeoutMillis: 1000 })
pool.on('error', () => {}) // a server that went away shows up as soft store_unavailable results, not as a crash
const stores = postgresStores({ pool, tablePrefix: config.tablePrefix, timeoutMs: config.timeoutMs ?? 2000 })
await stores.migrate()

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

const chargeCard = defineTool({
  name: 'charge_card',
  description: 'Charge a card',
  input: z.object({ order: z.string(), amount: z.number() }),
  effect: 'write',
  execute: async ({ order, amount }) => {
    try {
      await pool.query('INSERT INTO effects (what, pid) VALUES ($1, $2)', [`charge ${order}`, process.pid])
    } catch (err) {
      throw new ToolError('upstream_error', `the charge could not be recorded: ${err.message}`)
    }
    if (config.mode === 'crash-after-effect') process.kill(process.pid, 'SIGKILL')
    await sleep(config.holdMs ?? 0)
    return { chargeId: `ch_${process.pid}_${order}`, order, amount }
  },
})

const stack = createStack({
  tools: [chargeCard],
  middleware: [
    idempotency({ store: stores.idempotency, leaseMs: config.leaseMs, ttlMs: 600_000, waitMs: config.waitMs ?? 20_000, pollMs: 20 }),
  ],
})

const summary = (r) => ({ ok: r.ok, replayed: r.replayed, value: r.value, code: r.error?.code, events: r.trace.map((e) => e.type) })
const charge = (id, args, runId) => stack.dispatch({ id, name: 'charge_card', args }, { run: createRun({ id: runId }) }).then(summary)

process.stdout.write('ready\n')
const lines = createInterface({ input: process.stdin })
lines.on('line', async (line) => {
  const command = JSON.parse(line)
  const runId = command.runId ?? 'run'
  let results
  if (command.orders !== undefined) {
    // One call after another, as an agent's turns would make them.
    results = []
    for (const order of command.orders) results.push(await charge(`${command.id}-${order}`, { order, amount: 5 }, runId))
  } else {
    const calls = Array.from({ length: command.calls ?? 1 }, (_, i) => charge(`${command.id}-${i}`, command.args, runId))
    results = await Promise.all(calls)
  }
  process.stdout.write(`${JSON.stringify({ id: command.id, results })}\n`)
})
lines.on('close', () => void pool.end())
