import { type Logger, parseOptions, silentLogger, systemClock } from '@shallot/core'
import { type BoundedCall, boundedCall, refineWallNow, wallNowOf } from '@shallot/core/kit'
import { MAX_PUSHBACK_MS, type PushbackStore } from '@shallot/rate-limit'
import { z } from 'zod'
import type { RedisClient } from './redis-commands.js'
import { redisStoresOptionsSchema } from './redis-stores-options.js'
import { redisUnavailable } from './store-unavailable.js'

// `now` in ms: ARGV[1] when a test clock gives one, else Redis's own TIME, one clock for the fleet.
const NOW = `
local now
if ARGV[1] ~= '' then now = tonumber(ARGV[1]) else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
end
`

/**
 * Holds a key, atomically. KEYS: the hold. ARGV: now ('' for Redis's TIME), ms, the longest hold. The hold
 * is when it ends, in ms: one in place that ends later stays, unless it is not a number or ends further
 * ahead than the longest hold (a corrupt value), which is overwritten. It expires (PX) a second after it ends.
 */
export const PUSHBACK_HOLD_LUA = `${NOW}
local ms, longest = tonumber(ARGV[2]), tonumber(ARGV[3])
local ends = now + ms
if redis.call('TYPE', KEYS[1]).ok == 'string' then
  local held = tonumber(redis.call('GET', KEYS[1]))
  if held and held == held and held >= ends and held - now <= longest then return 0 end
end
redis.call('SET', KEYS[1], string.format('%.3f', ends), 'PX', math.ceil(ms) + 1000)
return 1
`

/** How much longer a key is held, in ms as text: '0' when it is not, 'corrupt' for a value that is not a number. */
export const PUSHBACK_HELD_LUA = `${NOW}
if redis.call('TYPE', KEYS[1]).ok ~= 'string' then return '0' end
local held = tonumber(redis.call('GET', KEYS[1]))
if not held or held ~= held then return 'corrupt' end
if held <= now then return '0' end
return string.format('%.3f', held - now)
`

const { client, prefix, timeoutMs, logger, clock, wallNow, now } = redisStoresOptionsSchema.shape

/**
 * Options of {@link redisPushbackStore}: `redisStores()`'s, for the shared pushback.
 *
 * @example
 * redisPushbackStoreOptionsSchema.safeParse({ client, prefix: 'billing' }).success // true
 */
export const redisPushbackStoreOptionsSchema = z
  .strictObject({ client, prefix, timeoutMs, logger, clock, wallNow, now })
  .superRefine(refineWallNow)

/** What {@link redisPushbackStore} accepts. */
export type RedisPushbackStoreOptions = z.input<typeof redisPushbackStoreOptionsSchema>

// The hash tag must end at the key's own end, so the braces a key may hold are escaped (as redisKeys does).
const tag = (text: string): string => text.replace(/[%{}]/g, (c) => `%${c.charCodeAt(0).toString(16)}`)

/**
 * A provider's pushback shared by a fleet (`rateLimit({ pushback })`, also `redisStores().pushback`): when
 * each key's hold ends, at `prefix:{key}:pushback`, held and read by one Lua script each on Redis's own
 * clock, so every worker reads the same rest whatever its own clock says. A hold expires a second after it
 * ends. Every operation gives up after `timeoutMs` with a soft `store_unavailable`, and a value that is not
 * a time is one too; the layer then goes on as its `onStoreFailure` says.
 *
 * @example
 * const client = new Redis(process.env.REDIS_URL, { maxRetriesPerRequest: 1, enableOfflineQueue: false })
 * createAgent({ model, tools, modelMiddleware: [retry(), rateLimit({ limit: 500, perMs: 60_000, pushback: redisPushbackStore({ client }) })] })
 */
export function redisPushbackStore(options: RedisPushbackStoreOptions): PushbackStore {
  const o = parseOptions('redisPushbackStore()', redisPushbackStoreOptionsSchema, options)
  const test = wallNowOf(o)
  return pushbackOn({
    client: o.client,
    prefix: o.prefix,
    log: o.logger ?? silentLogger,
    bounded: boundedCall(o.clock ?? systemClock, o.timeoutMs, redisUnavailable, 'Redis refused or lost the command'),
    nowArg: test === undefined ? () => '' : () => String(test()),
  })
}

/** The pushback store on a client, with a store family's prefix, deadline, log and clock (`redisStores()` shares its own). */
export function pushbackOn(p: { client: RedisClient; prefix: string; log: Logger; bounded: BoundedCall; nowArg(): string }): PushbackStore {
  const { bounded, log, nowArg } = p
  const redis = p.client
  redis.defineCommand('shallotPushbackHold', { numberOfKeys: 1, lua: PUSHBACK_HOLD_LUA })
  redis.defineCommand('shallotPushbackHeld', { numberOfKeys: 1, lua: PUSHBACK_HELD_LUA })
  const commands = redis as unknown as Record<string, ((...args: Array<string | number>) => Promise<unknown>) | undefined>
  const holdCommand = commands.shallotPushbackHold?.bind(redis)
  const heldCommand = commands.shallotPushbackHeld?.bind(redis)
  if (holdCommand === undefined || heldCommand === undefined)
    throw new TypeError('redisPushbackStore(): the client did not define the script commands')
  const keyOf = (key: string) => `${p.prefix}:{${tag(key)}}:pushback`

  return {
    hold(key, ms) {
      return bounded('pushback.hold', async () => void (await holdCommand(keyOf(key), nowArg(), ms, MAX_PUSHBACK_MS)))
    },
    heldFor(key) {
      return bounded('pushback.heldFor', async () => {
        const reply = await heldCommand(keyOf(key), nowArg())
        const ms = typeof reply === 'string' ? Number(reply) : Number.NaN
        if (!Number.isFinite(ms)) {
          log.warn({ key, reply: String(reply) }, 'pushback: Redis holds something the store does not understand')
          throw redisUnavailable('pushback.heldFor', 'Redis holds something the store does not understand')
        }
        return ms
      })
    },
  }
}
