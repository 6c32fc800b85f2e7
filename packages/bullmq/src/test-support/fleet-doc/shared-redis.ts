import { circuitBreaker } from '@shallot/circuit-breaker'
import { type AnyTool, createStack } from '@shallot/core'
import { idempotency } from '@shallot/idempotency'
import { retry } from '@shallot/retry'
import { type RedisClient, redisStores } from '@shallot/store-redis'

/** Many workers, one Redis: one idempotency record, one circuit and one retry budget for the fleet. */
export function fleetStack(client: RedisClient, tools: AnyTool[]) {
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
