import type { Cluster, Redis } from 'ioredis'
import {
  BEGIN_LUA,
  BREAKER_DISCARD_LUA,
  BREAKER_READ_LUA,
  BREAKER_WRITE_LUA,
  BUDGET_REFILL_LUA,
  BUDGET_TAKE_LUA,
  RECLAIM_LUA,
  SETTLE_LUA,
} from './redis-scripts.js'

/**
 * An ioredis client: one server (`new Redis()`) or a cluster (`new Cluster()`).
 *
 * @example
 * const client: RedisClient = new Redis(process.env.REDIS_URL, { maxRetriesPerRequest: 1, enableOfflineQueue: false })
 */
export type RedisClient = Redis | Cluster

type Arg = string | number

/** The stores' scripts as calls on one client. Replies are unchecked here; each store validates its own. */
export interface RedisCommands {
  begin(record: string, fence: string, now: string, argsHash: string, leaseMs: number, ttlMs: number): Promise<unknown>
  reclaim(record: string, fence: string, now: string, argsHash: string, leaseMs: number, ttlMs: number): Promise<unknown>
  settle(
    record: string,
    now: string,
    token: string,
    op: 'complete' | 'release' | 'unknown',
    ttlMs: number,
    result: string,
  ): Promise<unknown>
  breakerRead(key: string, now: string): Promise<unknown>
  breakerWrite(key: string, version: string, state: string, ttlMs: number): Promise<unknown>
  breakerDiscard(key: string, version: string): Promise<unknown>
  budgetTake(key: string, capacity: number, tokens: number): Promise<unknown>
  budgetRefill(key: string, capacity: number, tokens: number): Promise<unknown>
  get(key: string): Promise<string | null>
}

const SCRIPTS = {
  shallotIdempotencyBegin: { numberOfKeys: 2, lua: BEGIN_LUA },
  shallotIdempotencyReclaim: { numberOfKeys: 2, lua: RECLAIM_LUA },
  shallotIdempotencySettle: { numberOfKeys: 1, lua: SETTLE_LUA },
  shallotBreakerRead: { numberOfKeys: 1, lua: BREAKER_READ_LUA },
  shallotBreakerWrite: { numberOfKeys: 1, lua: BREAKER_WRITE_LUA },
  shallotBreakerDiscard: { numberOfKeys: 1, lua: BREAKER_DISCARD_LUA },
  shallotBudgetTake: { numberOfKeys: 1, lua: BUDGET_TAKE_LUA },
  shallotBudgetRefill: { numberOfKeys: 1, lua: BUDGET_REFILL_LUA },
} as const

/**
 * Defines the stores' Lua scripts on `client` with ioredis `defineCommand`: each runs by EVALSHA,
 * and ioredis sends the script again (EVAL) when Redis answers NOSCRIPT, as after a restart.
 *
 * @example
 * const commands = redisCommands(new Redis())
 * await commands.breakerRead('shallot:{search}:breaker', '')
 */
export function redisCommands(client: RedisClient): RedisCommands {
  for (const [name, definition] of Object.entries(SCRIPTS)) client.defineCommand(name, definition)
  const defined = client as unknown as Record<keyof typeof SCRIPTS, (...args: Arg[]) => Promise<unknown>>
  return {
    begin: (...args) => defined.shallotIdempotencyBegin(...args),
    reclaim: (...args) => defined.shallotIdempotencyReclaim(...args),
    settle: (...args) => defined.shallotIdempotencySettle(...args),
    breakerRead: (...args) => defined.shallotBreakerRead(...args),
    breakerWrite: (...args) => defined.shallotBreakerWrite(...args),
    breakerDiscard: (...args) => defined.shallotBreakerDiscard(...args),
    budgetTake: (...args) => defined.shallotBudgetTake(...args),
    budgetRefill: (...args) => defined.shallotBudgetRefill(...args),
    get: (key) => client.get(key),
  }
}
