import { createAgent } from '@shallot/agent'
import { circuitBreaker } from '@shallot/circuit-breaker'
import type { AnyTool, ModelAdapter } from '@shallot/core'
import { idempotency } from '@shallot/idempotency'
import { retry } from '@shallot/retry'
import pg from 'pg'
import { postgresStores } from './index.js'

export async function billingAgent(connectionString: string, model: ModelAdapter, tools: AnyTool[]) {
  const pool = new pg.Pool({ connectionString, connectionTimeoutMillis: 1000 })
  pool.on('error', (err) => console.warn('postgres:', err.message)) // a restart fails idle connections; the pool replaces them
  const stores = postgresStores({ pool, tablePrefix: 'billing_' })
  await stores.migrate() // creates the tables once; safe from every worker at the same time
  const agent = createAgent({
    model,
    tools,
    checkpoints: stores.checkpoints,
    middleware: [
      idempotency({ store: stores.idempotency }),
      circuitBreaker({ store: stores.breaker }),
      retry({ retryBudget: stores.retryBudget }),
    ],
  })
  return { agent, close: () => pool.end() }
}
