import { type BeginResult, type IdempotencyStore, parseStoredResult } from '@shallot/idempotency'
import type { RedisStoreContext } from './redis-store-context.js'
import { redisUnavailable } from './store-unavailable.js'
import { beginReplySchema, flagReplySchema } from './stored-values.js'

type BeginReply = ReturnType<typeof beginReplySchema.parse>

/**
 * The idempotency store of `redisStores()`: the `IdempotencyStore` protocol in Lua, one script per
 * step, so every worker of the fleet sees one record per key. Tokens come from an `INCR` counter per
 * scope, so they only grow; a settle with any other token (released, expired, replaced, or fenced
 * out because its lease ran out and another worker was told `unknown`) changes nothing.
 * Leases and TTLs run on Redis's clock. A record that is not well-formed (checked in the script,
 * its result checked with `parseStoredResult`) answers `unknown (corrupt)` and is left in place.
 *
 * @example
 * const { idempotency: store } = redisStores({ client })
 * createStack({ tools, middleware: [idempotency({ store, scope: 'tenant-a' })] })
 */
export function redisIdempotencyStore(context: RedisStoreContext): IdempotencyStore {
  const { commands, keys, bounded, log, nowArg } = context

  function parseBegin(reply: unknown): BeginReply {
    const parsed = beginReplySchema.safeParse(reply)
    if (parsed.success) return parsed.data
    throw redisUnavailable('idempotency.begin', 'Redis answered something the store does not understand', parsed.error)
  }

  function settle(key: string, token: string, op: 'complete' | 'release' | 'unknown', ttlMs: number, result: string) {
    const { record } = keys.idempotency(key)
    const name = op === 'unknown' ? 'markUnknown' : op
    return bounded(`idempotency.${name}`, async () => {
      const reply = flagReplySchema.safeParse(await commands.settle({ record, now: nowArg(), token, op, ttlMs, result }))
      if (!reply.success) throw redisUnavailable(`idempotency.${name}`, 'Redis answered something the store does not understand')
      return reply.data === 1
    })
  }

  // A begin that answered after its deadline may have claimed the key for nobody: give it back.
  function releaseLate(key: string, reply: unknown): void {
    const parsed = beginReplySchema.safeParse(reply)
    if (!parsed.success || parsed.data[0] !== 'new') return
    const token = parsed.data[1]
    settle(key, token, 'release', 0, '').then(
      (released) => log.info({ key, released }, 'released the key of a begin that answered after its deadline'),
      (err: unknown) => log.warn({ key, err }, 'could not release the key of a begin that answered after its deadline'),
    )
  }

  function corrupt(key: string, record: string, problem: string): BeginResult {
    log.warn({ key, record, problem }, 'idempotency record in Redis is corrupt; identical calls are refused until it expires or is removed')
    return { status: 'unknown', reason: 'corrupt', problem }
  }

  async function begin(key: string, argsHash: string, leaseMs: number, ttlMs: number): Promise<BeginResult> {
    const { record, fence } = keys.idempotency(key)
    const reply = await bounded(
      'idempotency.begin',
      async () => parseBegin(await commands.begin({ record, fence, now: nowArg(), argsHash, leaseMs, ttlMs })),
      (late) => releaseLate(key, late),
    )
    switch (reply[0]) {
      case 'new':
        return { status: 'new', token: reply[1] }
      case 'done': {
        const stored = parseStoredResult(reply[1])
        return 'result' in stored ? { status: 'done', result: stored.result } : corrupt(key, record, stored.problem)
      }
      case 'corrupt':
        return corrupt(key, record, reply[1])
      case 'unknown':
        return { status: 'unknown', reason: reply[1] }
      default:
        return { status: reply[0] }
    }
  }

  // A reclaim that answered after its deadline may have taken the record over for nobody: it stays
  // pending until its lease runs out, then reads unknown (lease_expired) again, as it did before.
  async function reclaim(key: string, argsHash: string, leaseMs: number, ttlMs: number): Promise<string | undefined> {
    const { record, fence } = keys.idempotency(key)
    return bounded('idempotency.reclaim', async () => {
      const reply = await commands.reclaim({ record, fence, now: nowArg(), argsHash, leaseMs, ttlMs })
      if (typeof reply !== 'string') throw redisUnavailable('idempotency.reclaim', 'Redis answered something the store does not understand')
      return reply === '' ? undefined : reply
    })
  }

  return {
    begin,
    reclaim,
    complete: (key, token, result, ttlMs) => settle(key, token, 'complete', ttlMs, JSON.stringify(result)),
    release: (key, token) => settle(key, token, 'release', 0, ''),
    markUnknown: (key, token, ttlMs) => settle(key, token, 'unknown', ttlMs, ''),
  }
}
