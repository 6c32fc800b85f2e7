import { parseOptions, silentLogger, systemClock } from '@shallot/core'
import { boundedCall, refineWallNow, wallNowOf } from '@shallot/core/kit'
import type { RateDecision, RateLimitStore, RateReservation, RateRule } from '@shallot/rate-limit'
import { z } from 'zod'
import type { RedisClient } from './redis-commands.js'
import { redisStoresOptionsSchema } from './redis-stores-options.js'
import { redisUnavailable } from './store-unavailable.js'

const NOW_FROM_ARGV = `
local now
if ARGV[1] ~= '' then now = tonumber(ARGV[1]) else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
end
`

// The key's refund sequence (KEYS[2]): 0 when missing or not a string.
const SEQ = `
local seq = 0
if redis.call('TYPE', KEYS[2]).ok == 'string' then seq = tonumber(redis.call('GET', KEYS[2])) or 0 end
`

/**
 * One GCRA decision, atomic. KEYS: the key's TAT, its refund sequence. ARGV: now ('' for Redis's TIME),
 * intervalMs, burst, maxWaitMs. Returns {admitted 0|1, waitMs as text}, and for a reservation (admitted
 * with a wait) also the new TAT as stored and the sequence, which `refund` needs (Lua numbers reach the
 * client as integers). A TAT that is not a finite number, or not a string at all, is read as a key at rest
 * and overwritten. An admitted call moves the TAT on by one interval and keeps it until it is at rest again
 * (PX), so idle keys expire. The sequence exists only once a place was given back: odd right after a
 * refund, made even by the next admission, and it expires with the TAT.
 */
export const RATE_LIMIT_ACQUIRE_LUA = `${NOW_FROM_ARGV}${SEQ}
local interval, burst, max_wait = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local tat = nil
if redis.call('TYPE', KEYS[1]).ok == 'string' then tat = tonumber(redis.call('GET', KEYS[1])) end
if not tat or tat ~= tat or tat == math.huge or tat == -math.huge or tat < now then tat = now end
local wait = tat - (burst - 1) * interval - now
if wait < 0 then wait = 0 end
if wait > max_wait then return {0, string.format('%.3f', wait)} end
local new = string.format('%.3f', tat + interval)
local px = math.ceil(tat + interval - now) + 1000
redis.call('SET', KEYS[1], new, 'PX', px)
if seq % 2 == 1 then seq = seq + 1 end
if seq > 0 then redis.call('SET', KEYS[2], tostring(seq), 'PX', px) end
if wait <= 0 then return {1, '0.000'} end
return {1, string.format('%.3f', wait), new, tostring(seq)}
`

/**
 * Gives a reservation's place back, atomically. KEYS: the TAT, the refund sequence. ARGV: now, intervalMs,
 * burst, the reservation's TAT as stored, its sequence. Only when the TAT is still the reservation's (no
 * call admitted behind it), the sequence is its own or one past (refunds of later places since, but no
 * refund-then-admit), and it has not come due: the TAT moves back one interval, never below now, and the
 * sequence is set one past the reservation's, so a second refund finds the TAT moved and changes nothing.
 * Returns 1 when given back, else 0.
 */
export const RATE_LIMIT_REFUND_LUA = `${NOW_FROM_ARGV}${SEQ}
local interval, burst, rseq = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[5])
if redis.call('TYPE', KEYS[1]).ok ~= 'string' or redis.call('GET', KEYS[1]) ~= ARGV[4] then return 0 end
if not rseq or (seq ~= rseq and seq ~= rseq + 1) then return 0 end
local tat = tonumber(ARGV[4])
if not (now < tat - burst * interval) then return 0 end
local new = math.max(tat - interval, now)
local px = math.ceil(new - now) + 1000
redis.call('SET', KEYS[1], string.format('%.3f', new), 'PX', px)
redis.call('SET', KEYS[2], tostring(rseq + 1), 'PX', px)
return 1
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

const waitSchema = z.string().transform(Number).pipe(z.number().min(0))
const replySchema = z.union([
  z.tuple([z.union([z.literal(0), z.literal(1)]), waitSchema]),
  z.tuple([
    z.literal(1),
    waitSchema,
    z.string().transform(Number).pipe(z.number()),
    z.string().transform(Number).pipe(z.number().int().min(0)),
  ]),
])

// The hash tag must end at the key's own end, so the braces a key may hold are escaped (as redisKeys does).
const tag = (text: string): string => text.replace(/[%{}]/g, (c) => `%${c.charCodeAt(0).toString(16)}`)

/**
 * One rate limit for a fleet of workers (`rateLimit({ store })`): each key's theoretical arrival time in
 * Redis at `prefix:{key}:rate`, decided by one Lua script (atomic) on Redis's own clock, so admissions are
 * spaced by one clock whichever worker asks. A call that waits has its place reserved in the same script;
 * `refund` (a second script) gives it back when the caller is cancelled before its turn, if it is still the
 * key's last reservation (see `RateLimitStore.refund`). Every decision gives up after `timeoutMs` with a soft `store_unavailable`; the layer then fails open or
 * closed as its `onStoreFailure` says. A decision that arrives after its deadline is dropped, and a place
 * it reserved is given back (while it is still the key's last).
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
  redis.defineCommand('shallotRateLimitAcquire', { numberOfKeys: 2, lua: RATE_LIMIT_ACQUIRE_LUA })
  redis.defineCommand('shallotRateLimitRefund', { numberOfKeys: 2, lua: RATE_LIMIT_REFUND_LUA })
  const commands = redis as unknown as Record<string, ((...args: Array<string | number>) => Promise<unknown>) | undefined>
  const acquire = commands.shallotRateLimitAcquire
  const refund = commands.shallotRateLimitRefund
  if (acquire === undefined || refund === undefined)
    throw new TypeError('redisRateLimitStore(): the client did not define the script commands')
  const run = acquire.bind(redis)
  const giveBack = refund.bind(redis)
  const keysOf = (key: string): [string, string] => [`${o.prefix}:{${tag(key)}}:rate`, `${o.prefix}:{${tag(key)}}:rate:seq`]
  const nowArg = () => (test === undefined ? '' : String(test()))
  const refundOf = (key: string, rule: RateRule, reservation: RateReservation): Promise<boolean> =>
    bounded('rateLimit.refund', async () => {
      const tat = reservation.tat.toFixed(3)
      const reply = await giveBack(...keysOf(key), nowArg(), rule.intervalMs, rule.burst, tat, reservation.seq)
      return reply === 1
    })
  // A reservation that Redis answers after timeoutMs was never used: it is given back (best effort, logged).
  const late = (key: string, rule: RateRule) => (decision: RateDecision) => {
    if (decision.reservation === undefined) return
    refundOf(key, rule, decision.reservation).then(undefined, (err: unknown) => {
      log.warn({ key, err }, 'rate limit: a late reservation could not be given back; the place stays taken')
    })
  }

  return {
    acquire(key: string, rule: RateRule): Promise<RateDecision> {
      return bounded(
        'rateLimit.acquire',
        async () => {
          const reply = await run(...keysOf(key), nowArg(), rule.intervalMs, rule.burst, rule.maxWaitMs)
          const parsed = replySchema.safeParse(reply)
          if (!parsed.success) {
            log.warn({ key, reply: String(reply) }, 'rate limit: Redis answered something the store does not understand')
            throw redisUnavailable('rateLimit.acquire', 'Redis answered something the store does not understand', parsed.error)
          }
          const [admitted, waitMs, tat, seq] = parsed.data
          if (tat === undefined || seq === undefined) return { admitted: admitted === 1, waitMs }
          return { admitted: true, waitMs, reservation: { tat, seq } }
        },
        late(key, rule),
      )
    },
    refund: refundOf,
  }
}
