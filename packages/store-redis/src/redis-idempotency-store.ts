import type { BeginResult, IdempotencyStore, StoredResult } from '@shallot/idempotency'
import type { RedisStoreContext } from './redis-store-context.js'
import { redisUnavailable } from './store-unavailable.js'
import { beginReplySchema, flagReplySchema, parseStored, storedResultSchema } from './stored-values.js'

type BeginReply = ReturnType<typeof beginReplySchema.parse>

/**
 * The idempotency store of `redisStores()`: the `IdempotencyStore` protocol in Lua, one script per
 * step, so every worker of the fleet sees one record per key. Tokens come from an `INCR` counter per
 * scope, so they only grow; a settle with any other token (released, expired, replaced, or fenced
 * out because its lease ran out and another worker was told `unknown`) changes nothing.
 * Leases and TTLs run on Redis's clock.
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
      const reply = flagReplySchema.safeParse(await commands.settle(record, nowArg(), token, op, ttlMs, result))
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

  async function begin(key: string, argsHash: string, leaseMs: number, ttlMs: number): Promise<BeginResult> {
    const { record, fence } = keys.idempotency(key)
    for (let attempt = 1; ; attempt++) {
      const reply = await bounded(
        'idempotency.begin',
        async () => parseBegin(await commands.begin(record, fence, nowArg(), argsHash, leaseMs, ttlMs)),
        (late) => releaseLate(key, late),
      )
      switch (reply[0]) {
        case 'new':
          if (reply[2] === '1') log.warn({ key, record }, 'idempotency record in Redis was corrupt; treated as absent and replaced')
          return { status: 'new', token: reply[1] }
        case 'done': {
          const stored = parseStored(storedResultSchema, reply[1])
          if ('value' in stored) return { status: 'done', result: stored.value as StoredResult }
          log.warn({ key, record, problem: stored.problem }, 'stored idempotency result in Redis was corrupt; treated as absent')
          await bounded('idempotency.begin', () => commands.discard(record, reply[2]))
          if (attempt >= 2) throw redisUnavailable('idempotency.begin', 'the stored record stays corrupt')
          break
        }
        case 'unknown':
          return { status: 'unknown', reason: reply[1] }
        default:
          return { status: reply[0] }
      }
    }
  }

  return {
    begin,
    complete: (key, token, result, ttlMs) => settle(key, token, 'complete', ttlMs, JSON.stringify(result)),
    release: (key, token) => settle(key, token, 'release', 0, ''),
    markUnknown: (key, token, ttlMs) => settle(key, token, 'unknown', ttlMs, ''),
  }
}
