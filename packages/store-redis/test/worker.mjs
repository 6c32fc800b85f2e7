// A worker process for src/fleet.processes.test.ts (and a model for examples/fleet). It runs the
// BUILT packages (dist), as a deployment would; the test builds them first.
// Usage: node worker.mjs '<json config>'. Prints "ready" once connected, then answers each JSON
// command line on stdin with one JSON line: { id, results: [{ ok, replayed, value, code, circuit, events }] }.
// A command with `held: true` keeps its tool calls waiting in the tool until a `{ "release": true }` line
// comes, and prints { id, decided: true } once each of its calls waits there or has its answer (a refusal).
import { appendFileSync } from 'node:fs'
import { createInterface } from 'node:readline'
import { circuitBreaker, consecutive } from '@shallot/circuit-breaker'
import { createRun, createStack, defineTool, ToolError } from '@shallot/core'
import { idempotency } from '@shallot/idempotency'
import { Redis } from 'ioredis'
import { z } from 'zod'
import { redisStores } from '../dist/index.js'

const config = JSON.parse(process.argv[2])
const client = new Redis({
  host: '127.0.0.1',
  port: config.port,
  maxRetriesPerRequest: 1,
  enableOfflineQueue: false,
  retryStrategy: () => 20,
  lazyConnect: true,
})
client.on('error', () => {}) // a Redis that went away shows up as soft store_unavailable results, not as a crash
await client.connect()
const stores = redisStores({ client, prefix: config.prefix, timeoutMs: config.timeoutMs ?? 200 })

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
/** The world: each side effect is one line in a file, so it survives the worker and Redis. */
const record = (file, what) => appendFileSync(file, `${what} ${process.pid}\n`)

let lookupFails = false
let holdMs = config.holdMs ?? 0
// Like lookupFails and holdMs, the gate is the last command's: the fleet test sends one command at a time.
/** The last command's gate when it is held: its calls wait there instead of sleeping holdMs. */
let gate
/** The last held command's gate, which a release line opens. */
let lastHeld
/** How a tool call holds: in the held command's gate, or for holdMs. */
const hold = () => (gate === undefined ? sleep(holdMs) : gate.enter())

/** A gate for a held command of `calls` calls: it says "decided" once none of them can still reach the tool. */
function heldGate(id, calls) {
  let decided = 0
  let release
  const released = new Promise((resolve) => {
    release = resolve
  })
  // Until the release, a call that settled never entered the tool, so each call counts once.
  const count = () => {
    if (++decided === calls) process.stdout.write(`${JSON.stringify({ id, decided: true })}\n`)
  }
  return {
    enter() {
      count()
      return released
    },
    settled: count,
    release,
  }
}

const chargeCard = defineTool({
  name: 'charge_card',
  description: 'Charge a card',
  input: z.object({ order: z.string(), amount: z.number() }),
  effect: 'write',
  execute: async ({ order, amount }) => {
    record(config.effects, `charge ${order}`)
    await hold()
    return { chargeId: `ch_${process.pid}`, order, amount }
  },
})
const lookup = defineTool({
  name: 'lookup',
  description: 'Look something up upstream',
  input: z.object({ q: z.string() }),
  effect: 'read',
  execute: async ({ q }) => {
    record(config.effects, `lookup ${q}`)
    await hold()
    if (lookupFails) throw new ToolError('upstream_error', 'upstream answered 503')
    return `hit for ${q}`
  },
})

const stack = createStack({
  tools: [chargeCard, lookup],
  middleware: [
    idempotency({ store: stores.idempotency, leaseMs: config.leaseMs, ttlMs: 60_000, waitMs: 10_000, pollMs: 20 }),
    circuitBreaker({ store: stores.breaker, policy: consecutive({ threshold: 2 }), cooldownMs: config.cooldownMs, maxHalfOpenMs: 30_000 }),
  ],
})

const resultOf = (r) => ({
  ok: r.ok,
  replayed: r.replayed,
  value: r.value,
  code: r.error?.code,
  retryAfterMs: r.error?.retryAfterMs,
  events: r.trace.map((e) => e.type),
})

process.stdout.write('ready\n')
const lines = createInterface({ input: process.stdin })
lines.on('line', async (line) => {
  const command = JSON.parse(line)
  if (command.release) return lastHeld?.release()
  if (command.lookupFails !== undefined) lookupFails = command.lookupFails
  holdMs = command.holdMs ?? config.holdMs ?? 0
  const calls = command.calls ?? 1
  const held = command.held ? heldGate(command.id, calls) : undefined
  gate = held
  if (held !== undefined) lastHeld = held
  const run = createRun({ id: command.runId ?? 'run' })
  const results = await Promise.all(
    Array.from({ length: calls }, (_, i) =>
      stack.dispatch({ id: `${command.id}-${i}`, name: command.tool, args: command.args }, { run }).then((r) => {
        held?.settled()
        return resultOf(r)
      }),
    ),
  )
  process.stdout.write(`${JSON.stringify({ id: command.id, results })}\n`)
})
lines.on('close', () => client.disconnect())
