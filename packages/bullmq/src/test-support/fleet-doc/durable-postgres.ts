import { createAgent } from '@shallot/agent'
import { circuitBreaker } from '@shallot/circuit-breaker'
import type { AnyTool, ModelAdapter } from '@shallot/core'
import { idempotency } from '@shallot/idempotency'
import { retry } from '@shallot/retry'
import { postgresStores } from '@shallot/store-postgres'

/** Records and checkpoints that must outlive any machine: PostgreSQL, the database you already back up. */
export async function durableAgent(connectionString: string, model: ModelAdapter, tools: AnyTool[]) {
  const stores = postgresStores({ connectionString, tablePrefix: 'billing_' })
  await stores.migrate() // safe from every worker at once
  const agent = createAgent({
    model,
    tools,
    middleware: [idempotency({ store: stores.idempotency }), circuitBreaker({ store: stores.breaker }), retry({ capMs: 2000 })],
    checkpoints: stores.checkpoints,
    park: { afterMs: 5000 },
  })
  return { agent, checkpoints: stores.checkpoints, close: () => stores.close() }
}
