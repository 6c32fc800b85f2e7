import type { Cluster, Redis } from 'ioredis'
import {
  BEGIN_LUA,
  BREAKER_DISCARD_LUA,
  BREAKER_READ_LUA,
  BREAKER_WRITE_LUA,
  BUDGET_READ_LUA,
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

/** What an idempotency `begin` or `reclaim` script is given: the record and its fence counter, and the claim's terms. */
export interface ClaimArgs {
  readonly record: string
  readonly fence: string
  /** Redis's own TIME when empty; a test may pass a time. */
  readonly now: string
  readonly argsHash: string
  readonly leaseMs: number
  readonly ttlMs: number
}

/** What the idempotency settle script is given: whose claim (`token`) ends, how, and the result it stores. */
export interface SettleArgs {
  readonly record: string
  readonly now: string
  readonly token: string
  readonly op: 'complete' | 'release' | 'unknown'
  readonly ttlMs: number
  readonly result: string
}

/**
 * The stores' scripts as calls on one client. Replies are unchecked here; each store validates its own. The
 * idempotency scripts take their arguments by name; the order KEYS and ARGV want is written once, below.
 */
export interface RedisCommands {
  begin(args: ClaimArgs): Promise<unknown>
  reclaim(args: ClaimArgs): Promise<unknown>
  settle(args: SettleArgs): Promise<unknown>
  breakerRead(key: string, now: string): Promise<unknown>
  breakerWrite(key: string, version: string, state: string, ttlMs: number): Promise<unknown>
  breakerDiscard(key: string, version: string): Promise<unknown>
  budgetTake(key: string, capacity: number, tokens: number, refill: number): Promise<unknown>
  budgetRefill(key: string, capacity: number, tokens: number): Promise<unknown>
  budgetRead(key: string): Promise<unknown>
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
  shallotBudgetRead: { numberOfKeys: 1, lua: BUDGET_READ_LUA },
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
    // KEYS: record, fence counter. ARGV: now, argsHash, leaseMs, ttlMs.
    begin: (a) => defined.shallotIdempotencyBegin(a.record, a.fence, a.now, a.argsHash, a.leaseMs, a.ttlMs),
    reclaim: (a) => defined.shallotIdempotencyReclaim(a.record, a.fence, a.now, a.argsHash, a.leaseMs, a.ttlMs),
    // KEYS: record. ARGV: now, token, op, ttlMs, result.
    settle: (a) => defined.shallotIdempotencySettle(a.record, a.now, a.token, a.op, a.ttlMs, a.result),
    breakerRead: (...args) => defined.shallotBreakerRead(...args),
    breakerWrite: (...args) => defined.shallotBreakerWrite(...args),
    breakerDiscard: (...args) => defined.shallotBreakerDiscard(...args),
    budgetTake: (...args) => defined.shallotBudgetTake(...args),
    budgetRefill: (...args) => defined.shallotBudgetRefill(...args),
    budgetRead: (key) => defined.shallotBudgetRead(key),
  }
}
