// A worker process for the multi-process tests in src/sqlite-store.processes.test.ts.
// It runs the BUILT packages (dist), as a real deployment would; the test builds them first.
// Usage: node worker.mjs '<json config>'  → prints one JSON line per finished call, or "ready" and waits for "go".
import { createInterface } from 'node:readline'
import { createRun, createStack, defineTool } from '@shallot/core'
import { idempotency } from '@shallot/idempotency'
import { z } from 'zod'
import { sqliteStore } from '../dist/index.js'

const config = JSON.parse(process.argv[2])
const store = sqliteStore({ path: config.db })
store.database.exec('CREATE TABLE IF NOT EXISTS effects (id INTEGER PRIMARY KEY AUTOINCREMENT, run TEXT NOT NULL, pid INTEGER NOT NULL)')
const recordEffect = store.database.prepare('INSERT INTO effects (run, pid) VALUES (?, ?)')

const chargeCard = defineTool({
  name: 'charge_card',
  description: 'Charge a card',
  input: z.object({ card: z.string(), amount: z.number() }),
  effect: 'write',
  execute: async ({ amount }) => {
    recordEffect.run(config.runId, process.pid) // the side effect: the card is charged
    if (config.mode === 'crash-after-effect') process.kill(process.pid, 'SIGKILL')
    await new Promise((resolve) => setTimeout(resolve, config.holdMs ?? 0))
    return { chargeId: `ch_${process.pid}`, amount }
  },
})

const stack = createStack({
  tools: [chargeCard],
  middleware: [idempotency({ store, leaseMs: config.leaseMs ?? 120_000, waitMs: config.waitMs ?? 10_000, pollMs: config.pollMs ?? 20 })],
})
const run = createRun({ id: config.runId })

if (config.barrier) {
  process.stdout.write('ready\n')
  const lines = createInterface({ input: process.stdin })
  await new Promise((resolve) => lines.once('line', resolve))
  lines.close()
}

const calls = Array.from({ length: config.calls ?? 1 }, (_, i) =>
  stack.dispatch({ id: `call-${i}`, name: 'charge_card', args: { card: 'card-1', amount: 5 } }, { run }).then((result) => {
    const { ok, replayed, value, error, trace } = result
    process.stdout.write(`${JSON.stringify({ ok, replayed, value, code: error?.code, events: trace.map((e) => e.type) })}\n`)
  }),
)
await Promise.all(calls)
if (config.mode === 'kill-after-complete') process.kill(process.pid, 'SIGKILL')
store.close()
