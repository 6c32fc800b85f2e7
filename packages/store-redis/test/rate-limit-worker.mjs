// A worker process for src/rate-limit.processes.test.ts. It runs the BUILT packages (dist), as a deployment would.
// Usage: node rate-limit-worker.mjs '<json config>'. Prints "ready" once connected, then answers each JSON command
// line { id, calls, closed? } on stdin with one JSON line: { id, results: [{ ok, code, retryAfterMs, waitMs, startedAt, ranAt }] },
// having made `calls` calls at once through rateLimit() on a store shared in Redis. Times are wall-clock epoch ms.
import { createInterface } from 'node:readline'
import { createStack, defineTool } from '@shallot/core'
import { rateLimit } from '@shallot/rate-limit'
import { Redis } from 'ioredis'
import { z } from 'zod'
import { redisRateLimitStore } from '../dist/index.js'

const config = JSON.parse(process.argv[2])
const client = new Redis({
  host: '127.0.0.1',
  port: config.port,
  maxRetriesPerRequest: 1,
  enableOfflineQueue: false,
  retryStrategy: () => 20,
  lazyConnect: true,
})
client.on('error', () => {}) // a Redis that went away shows up as the layer's fallback, not as a crash
await client.connect()
const store = redisRateLimitStore({ client, prefix: config.prefix, timeoutMs: config.timeoutMs })
const wallNow = () => performance.timeOrigin + performance.now()

const ranAt = new Map()
const lookup = defineTool({
  name: 'lookup',
  description: 'Look something up upstream',
  input: z.object({ id: z.string() }),
  effect: 'read',
  execute: ({ id }) => {
    ranAt.set(id, wallNow())
    return 'hit'
  },
})
const limit = { limit: config.limit, perMs: config.perMs, burst: config.burst, maxWaitMs: config.maxWaitMs, store }
const stacks = {
  open: createStack({ tools: [lookup], middleware: [rateLimit(limit)] }),
  closed: createStack({ tools: [lookup], middleware: [rateLimit({ ...limit, onStoreFailure: 'closed' })] }),
}

process.stdout.write('ready\n')
const lines = createInterface({ input: process.stdin })
lines.on('line', async (line) => {
  const command = JSON.parse(line)
  const stack = command.closed ? stacks.closed : stacks.open
  // All calls are in flight at once, but each starts in its own turn of the event loop, so the timers of calls
  // already admitted are not held up behind the synchronous work of starting the rest.
  const calls = []
  for (let i = 0; i < command.calls; i++) {
    const id = `${process.pid}-${command.id}-${i}`
    const startedAt = wallNow()
    calls.push(
      stack.dispatch({ id, name: 'lookup', args: { id } }).then((r) => ({
        ok: r.ok,
        code: r.error?.code,
        retryAfterMs: r.error?.retryAfterMs,
        waitMs: r.trace.find((e) => e.type === 'rate-limit.waiting')?.waitMs ?? 0,
        startedAt,
        ranAt: ranAt.get(id),
      })),
    )
    await new Promise((resolve) => setImmediate(resolve))
  }
  const results = await Promise.all(calls)
  process.stdout.write(`${JSON.stringify({ id: command.id, results })}\n`)
})
lines.on('close', () => client.disconnect())
