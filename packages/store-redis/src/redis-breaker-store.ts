import { type BreakerState, type BreakerStore, mapTimes, READ_MARGIN_MS, timeMap, updateRounds } from '@shallot/circuit-breaker'
import type { RedisStoreContext } from './redis-store-context.js'
import { redisUnavailable } from './store-unavailable.js'
import { breakerReadReplySchema, breakerStateSchema, flagReplySchema, parseStored } from './stored-values.js'

interface Read {
  readonly state: BreakerState | undefined
  readonly version: string
  readonly redisNow: number
}

/**
 * The breaker store of `redisStores()`: one state per breaker key for the whole fleet, updated by
 * compare-and-set (a Lua script checks the version read), so `change` may run again after another
 * worker wrote first. Concurrent updates of one key in this process go in one round: their changes
 * apply in call order to one read and are written once, so contention grows with workers, not calls.
 * Times are kept in Redis's clock and handed to the breaker in the stack's clock, so workers whose
 * clocks started at different moments agree on cooldowns and on the one half-open probe. When Redis
 * is slow or down, `update` rejects within the timeout and the breaker decides on its local state.
 * So it does when the state read back is corrupt: that one update rejects and the unreadable value
 * is deleted (compare-and-set on its version), so the next update starts the shared state afresh.
 *
 * @example
 * const { breaker: store } = redisStores({ client })
 * createStack({ tools, middleware: [circuitBreaker({ store, cooldownMs: 30_000 })] })
 */
export function redisBreakerStore(context: RedisStoreContext & { readonly ttlMs: number }): BreakerStore {
  const { commands, keys, bounded, clock, log, nowArg, ttlMs } = context

  async function read(key: string, redisKey: string, op: string): Promise<Read> {
    const reply = breakerReadReplySchema.safeParse(await commands.breakerRead(redisKey, nowArg()))
    if (!reply.success) throw redisUnavailable(op, 'Redis answered something the store does not understand', reply.error)
    const [raw, version, redisNow, wrongType] = reply.data
    const stored = wrongType !== '' ? { problem: wrongType } : raw === '' ? undefined : parseStored(breakerStateSchema, raw)
    if (stored === undefined) return { state: undefined, version, redisNow }
    if ('value' in stored) return { state: stored.value as BreakerState, version, redisNow }
    // Fails to this worker's own state for this call (the breaker logs it and emits circuit-breaker.store_error),
    // and removes the unreadable value so the fleet shares one breaker again from the next call.
    const discarded = flagReplySchema.safeParse(await commands.breakerDiscard(redisKey, version))
    log.warn({ key, redisKey, problem: stored.problem, discarded: discarded.data === 1 }, 'breaker state in Redis was corrupt; discarded')
    throw redisUnavailable(op, `the breaker state of "${key}" was corrupt (${stored.problem}) and was discarded`)
  }

  // A write that lost the compare-and-set to another worker reads again and applies the changes again.
  const enqueue = updateRounds(clock, async (key, round) => {
    const redisKey = keys.breaker(key)
    while (!round.abandoned) {
      const { state, version, redisNow } = await read(key, redisKey, 'circuit-breaker.update')
      const next = round.apply(state, redisNow)
      if (next === state) return
      if (flagReplySchema.parse(await commands.breakerWrite(redisKey, version, JSON.stringify(next), ttlMs)) === 1) return
    }
  })

  return {
    get(key) {
      const anchor = clock.now() - READ_MARGIN_MS
      return bounded('circuit-breaker.get', async () => {
        const { state, redisNow } = await read(key, keys.breaker(key), 'circuit-breaker.get')
        return state === undefined ? undefined : mapTimes(state, timeMap(anchor, redisNow).toLocal)
      })
    },

    update(key, change) {
      return bounded('circuit-breaker.update', (deadline) => enqueue(key, change, deadline))
    },
  }
}
