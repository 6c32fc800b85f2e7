import { parseOptions, silentLogger, systemClock } from '@shallot/core'
import { boundedCall, refineWallNow, wallNowOf } from '@shallot/core/kit'
import type { RateDecision, RateLimitStore, RateRule } from '@shallot/rate-limit'
import { z } from 'zod'
import type { RedisClient } from './redis-commands.js'
import { redisStoresOptionsSchema } from './redis-stores-options.js'
import { redisUnavailable } from './store-unavailable.js'

/**
 * One GCRA decision, atomic. KEYS: the key's TAT. ARGV: now ('' for Redis's TIME), intervalMs, burst,
 * maxWaitMs. Returns {admitted 0|1, waitMs as text} (Lua numbers reach the client as integers). A TAT that
 * is not a finite number, or not a string at all, is read as a key at rest and overwritten. An admitted call
 * moves the TAT on by one interval and keeps it until it is at rest again (PX), so idle keys expire.
 */
export const RATE_LIMIT_ACQUIRE_LUA = `
local now
if ARGV[1] ~= '' then now = tonumber(ARGV[1]) else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
end
local interval, burst, max_wait = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local tat = nil
if redis.call('TYPE', KEYS[1]).ok == 'string' then tat = tonumber(redis.call('GET', KEYS[1])) end
if not tat or tat ~= tat or tat == math.huge or tat == -math.huge or tat < now then tat = now end
local wait = tat - (burst - 1) * interval - now
if wait < 0 then wait = 0 end
if wait > max_wait then return {0, string.format('%.3f', wait)} end
local new = tat + interval
redis.call('SET', KEYS[1], string.format('%.3f', new), 'PX', math.ceil(new - now) + 1000)
return {1, string.format('%.3f', wait)}
`

const { client, prefix, timeoutMs, logger, clock, wallNow, now } = redisStoresOptionsSchema.shape

/**
 * Options of {@link redisRateLimitStore}: `redisStores()`'s, for the rate limit.
 *
 * @example
 * redisRateLimitStoreOptionsSchema.safeParse({ client, prefix: 'billing' }).success // true
 */
export const redisRateLimitStoreOptionsSchema = z
  .strictObject({ client, prefix, timeoutMs, logger, clock, wallNow, now })
  .superRefine(refineWallNow)

/** What {@link redisRateLimitStore} accepts. */
export type RedisRateLimitStoreOptions = z.input<typeof redisRateLimitStoreOptionsSchema>

const replySchema = z.tuple([z.union([z.literal(0), z.literal(1)]), z.string().transform(Number).pipe(z.number().min(0))])

// The hash tag must end at the key's own end, so the braces a key may hold are escaped (as redisKeys does).
const tag = (text: string): string => text.replace(/[%{}]/g, (c) => `%${c.charCodeAt(0).toString(16)}`)

/**
 * One rate limit for a fleet of workers (`rateLimit({ store })`): each key's theoretical arrival time in
 * Redis at `prefix:{key}:rate`, decided by one Lua script (atomic) on Redis's own clock, so admissions are
 * spaced by one clock whichever worker asks. A call that waits has its place reserved in the same script.
 * Every decision gives up after `timeoutMs` with a soft `store_unavailable`; the layer then fails open or
 * closed as its `onStoreFailure` says. A decision that arrives after its deadline is dropped: the place it
 * took goes unused, which can only admit fewer calls, never more.
 *
 * @example
 * const client = new Redis(process.env.REDIS_URL, { maxRetriesPerRequest: 1, enableOfflineQueue: false })
 * const store = redisRateLimitStore({ client, prefix: 'billing' })
 * createStack({ tools, middleware: [rateLimit({ limit: 10, store, onStoreFailure: 'closed' })] })
 */
export function redisRateLimitStore(options: RedisRateLimitStoreOptions): RateLimitStore {
  const o = parseOptions('redisRateLimitStore()', redisRateLimitStoreOptionsSchema, options)
  const test = wallNowOf(o)
  const log = o.logger ?? silentLogger
  const bounded = boundedCall(o.clock ?? systemClock, o.timeoutMs, redisUnavailable, 'Redis refused or lost the command')
  const redis: RedisClient = o.client
  redis.defineCommand('shallotRateLimitAcquire', { numberOfKeys: 1, lua: RATE_LIMIT_ACQUIRE_LUA })
  const acquire = (redis as unknown as Record<string, (...args: Array<string | number>) => Promise<unknown>>).shallotRateLimitAcquire
  if (acquire === undefined) throw new TypeError('redisRateLimitStore(): the client did not define the script command')
  const run = acquire.bind(redis)

  return {
    acquire(key: string, rule: RateRule): Promise<RateDecision> {
      return bounded('rateLimit.acquire', async () => {
        const nowArg = test === undefined ? '' : String(test())
        const reply = await run(`${o.prefix}:{${tag(key)}}:rate`, nowArg, rule.intervalMs, rule.burst, rule.maxWaitMs)
        const parsed = replySchema.safeParse(reply)
        if (!parsed.success) {
          log.warn({ key, reply: String(reply) }, 'rate limit: Redis answered something the store does not understand')
          throw redisUnavailable('rateLimit.acquire', 'Redis answered something the store does not understand', parsed.error)
        }
        return { admitted: parsed.data[0] === 1, waitMs: parsed.data[1] }
      })
    },
  }
}
