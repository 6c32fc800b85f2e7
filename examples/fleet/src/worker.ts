// One worker of the fleet: a shallot stack whose idempotency records, breaker and retry budget live
// in the shared Redis. main.ts starts N of these; each answers JSON commands on stdin, one JSON line
// per command on stdout. The "world" is a file: one line per side effect, so it outlives everything.
import { appendFileSync } from 'node:fs'
import { createInterface } from 'node:readline'
import { circuitBreaker, consecutive } from '@shallot/circuit-breaker'
import { createRun, createStack, defineTool, ToolError } from '@shallot/core'
import { idempotency } from '@shallot/idempotency'
import { retry } from '@shallot/retry'
import { redisStores } from '@shallot/store-redis'
import { Redis } from 'ioredis'
import { z } from 'zod'
import type { CallSummary, WorkerCommand, WorkerConfig } from './protocol.js'

const config = JSON.parse(process.argv[2] ?? '{}') as WorkerConfig
const client = new Redis({
  host: '127.0.0.1',
  port: config.port,
  maxRetriesPerRequest: 1,
  enableOfflineQueue: false,
  retryStrategy: () => 50,
  lazyConnect: true,
})
// ioredis reconnects by itself; while Redis is away the stores answer with soft errors.
client.on('error', () => {})
await client.connect()
const stores = redisStores({ client, prefix: 'fleet-example', retryBudget: { capacity: 50 } })

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
let upstreamDown = false
let holdMs = config.holdMs

const chargeCard = defineTool({
  name: 'charge_card',
  description: 'Charge a card for an order',
  input: z.object({ order: z.string(), amount: z.number() }),
  effect: 'write',
  execute: async ({ order, amount }) => {
    appendFileSync(config.effects, `charge ${order} ${process.pid}\n`)
    await sleep(holdMs)
    return { chargeId: `ch_${process.pid}_${order}`, amount }
  },
})
const search = defineTool({
  name: 'search',
  description: 'Search an upstream index',
  input: z.object({ q: z.string() }),
  effect: 'read',
  execute: async ({ q }) => {
    appendFileSync(config.effects, `search ${q} ${process.pid}\n`)
    await sleep(holdMs)
    if (upstreamDown) throw new ToolError('upstream_error', 'search upstream answered 503', { retryable: false })
    return `results for ${q}`
  },
})

const stack = createStack({
  tools: [chargeCard, search],
  middleware: [
    idempotency({ store: stores.idempotency, leaseMs: config.leaseMs, pollMs: 20 }),
    circuitBreaker({ store: stores.breaker, policy: consecutive({ threshold: 3 }), cooldownMs: config.cooldownMs }),
    retry({ retryBudget: stores.retryBudget, backoff: 'none' }),
  ],
})

async function dispatch(command: WorkerCommand, i: number): Promise<CallSummary> {
  const run = createRun({ id: command.runId ?? `run-${process.pid}` })
  const args = command.distinct ? { ...command.args, order: `${String(command.args.order)}-${i}` } : command.args
  const started = performance.now()
  const result = await stack.dispatch({ id: `${command.id}-${i}`, name: command.tool, args }, { run })
  return {
    ok: result.ok,
    replayed: result.replayed,
    code: result.error?.code,
    retryAfterMs: result.error?.retryAfterMs,
    ms: performance.now() - started,
    events: result.trace.map((e) => e.type),
  }
}

process.stdout.write('ready\n')
const lines = createInterface({ input: process.stdin })
lines.on('line', async (line) => {
  const command = JSON.parse(line) as WorkerCommand
  if (command.upstreamDown !== undefined) upstreamDown = command.upstreamDown
  holdMs = command.holdMs ?? config.holdMs
  const calls = command.calls ?? 1
  const results: CallSummary[] = []
  if (command.sequential) for (let i = 0; i < calls; i++) results.push(await dispatch(command, i))
  else results.push(...(await Promise.all(Array.from({ length: calls }, (_, i) => dispatch(command, i)))))
  process.stdout.write(`${JSON.stringify({ id: command.id, results })}\n`)
})
lines.on('close', () => client.disconnect())
