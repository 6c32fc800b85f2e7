// The code samples of docs/fleet.md, verbatim between the markers (docs-fleet.test.ts checks that and runs them).

// doc:one-machine:start
import { type AnyTool, createAgent, type ModelAdapter } from '@shallot/core'
import { idempotency } from '@shallot/idempotency'
import { retry } from '@shallot/retry'
import { sqliteCheckpoints, sqliteStore } from '@shallot/store-sqlite'

/** One process, one file: records and checkpoints survive a restart; a run waiting 5 s or more parks. */
export function laptopAgent(model: ModelAdapter, tools: AnyTool[], path: string) {
  return createAgent({
    model,
    tools,
    middleware: [idempotency({ store: sqliteStore({ path }) }), retry({ capMs: 2000 })],
    checkpoints: sqliteCheckpoints({ path }),
    park: { afterMs: 5000 },
  })
}

// doc:one-machine:end

// doc:shared-redis:start
import { circuitBreaker } from '@shallot/circuit-breaker'
import { createStack } from '@shallot/core'
import { redisStores } from '@shallot/store-redis'
import type { Redis } from 'ioredis'

/** Many workers, one Redis: one idempotency record, one circuit and one retry budget for the fleet. */
export function fleetStack(client: Redis, tools: AnyTool[]) {
  const stores = redisStores({ client, prefix: 'billing' })
  return createStack({
    tools,
    middleware: [
      idempotency({ store: stores.idempotency }),
      circuitBreaker({ store: stores.breaker }),
      retry({ retryBudget: stores.retryBudget }),
    ],
  })
}

// doc:shared-redis:end

// doc:durable-postgres:start
import { postgresStores } from '@shallot/store-postgres'
import type pg from 'pg'

/** Records and checkpoints that must outlive any machine: PostgreSQL, the database you already back up. */
export async function durableAgent(pool: pg.Pool, model: ModelAdapter, tools: AnyTool[]) {
  const stores = postgresStores({ pool, tablePrefix: 'billing_' })
  await stores.migrate()
  const agent = createAgent({
    model,
    tools,
    middleware: [idempotency({ store: stores.idempotency }), circuitBreaker({ store: stores.breaker }), retry({ capMs: 2000 })],
    checkpoints: stores.checkpoints,
    park: { afterMs: 5000 },
  })
  return { agent, checkpoints: stores.checkpoints }
}

// doc:durable-postgres:end

// doc:bullmq:start
import { agentQueue, agentWorker } from './index.js'

/** Runs as jobs: a parked run waits as a delayed job; a crashed worker's runs go on elsewhere from their checkpoints. */
export async function startWorker(pool: pg.Pool, redis: { host: string; port: number }, model: ModelAdapter, tools: AnyTool[]) {
  const { agent, checkpoints } = await durableAgent(pool, model, tools)
  const connection = { ...redis, maxRetriesPerRequest: null }
  const worker = agentWorker({ name: 'billing', connection, agent, checkpoints, concurrency: 16, lockDuration: 30_000 })
  const runs = agentQueue({ name: 'billing', connection })
  return { worker, runs }
}
// elsewhere: await runs.enqueue({ runId: 'refund-42', input: 'Refund order 42' })
// doc:bullmq:end
