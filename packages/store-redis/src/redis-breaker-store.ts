import type { BreakerState, BreakerStore } from '@shallot/circuit-breaker'
import { mapTimes, READ_MARGIN_MS, type TimeMap, timeMap } from './breaker-times.js'
import type { RedisStoreContext } from './redis-store-context.js'
import { redisUnavailable } from './store-unavailable.js'
import { breakerReadReplySchema, breakerStateSchema, flagReplySchema, parseStored } from './stored-values.js'

type Change = (current: BreakerState | undefined) => BreakerState

/** One `update` call waiting for its key's next round. */
interface Waiting {
  readonly change: Change
  /** The worker's clock just before the call, less the read margin: the breaker's `now` is never earlier. */
  readonly anchor: number
  readonly deadline: AbortSignal
  resolve(state: BreakerState): void
  reject(error: unknown): void
}

/** The updates of one key waiting in this process, and whether a round for that key is running. */
type Queue = Waiting[] & { running: boolean }

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
  const queues = new Map<string, Queue>()

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

  /** Applies each change in order to the state read, in each change's own clock; undefined when one threw. */
  function applyAll(batch: readonly Waiting[], stored: BreakerState | undefined, redisNow: number) {
    const answers: Array<{ state: BreakerState } | { error: unknown }> = []
    let redisState = stored
    for (const waiting of batch) {
      const map: TimeMap = timeMap(waiting.anchor, redisNow)
      const current = redisState === undefined ? undefined : mapTimes(redisState, map.toLocal)
      try {
        const next = waiting.change(current)
        answers.push({ state: next })
        if (next !== current) redisState = mapTimes(next, map.toRedis)
      } catch (error) {
        answers.push({ error })
      }
    }
    return { answers, final: redisState }
  }

  async function round(key: string, redisKey: string, batch: Waiting[]): Promise<void> {
    for (;;) {
      if (batch.every((w) => w.deadline.aborted)) return
      const { state, version, redisNow } = await read(key, redisKey, 'circuit-breaker.update')
      // Callers past their deadline have decided on local state already; their changes must not reach Redis.
      const live = batch.filter((w) => !w.deadline.aborted)
      const { answers, final } = applyAll(live, state, redisNow)
      const written =
        final === state || flagReplySchema.parse(await commands.breakerWrite(redisKey, version, JSON.stringify(final), ttlMs)) === 1
      if (!written) continue
      live.forEach((w, i) => {
        const answer = answers[i]
        if (answer !== undefined && 'state' in answer) w.resolve(answer.state)
        else w.reject(answer?.error)
      })
      return
    }
  }

  function pump(key: string): void {
    const queue = queues.get(key)
    if (queue === undefined || queue.length === 0 || queue.running) return
    const batch = queue.splice(0)
    queue.running = true
    round(key, keys.breaker(key), batch)
      .catch((err: unknown) => {
        for (const w of batch) w.reject(err)
      })
      .finally(() => {
        queue.running = false
        if (queue.length === 0) queues.delete(key)
        else pump(key)
      })
  }

  return {
    get(key) {
      const anchor = clock.now() - READ_MARGIN_MS
      return bounded('circuit-breaker.get', async () => {
        const { state, redisNow } = await read(key, keys.breaker(key), 'circuit-breaker.get')
        return state === undefined ? undefined : mapTimes(state, timeMap(anchor, redisNow).toLocal)
      })
    },

    update(key, change) {
      const anchor = clock.now() - READ_MARGIN_MS
      return bounded(
        'circuit-breaker.update',
        (deadline) =>
          new Promise<BreakerState>((resolve, reject) => {
            let queue = queues.get(key)
            if (queue === undefined) queues.set(key, (queue = Object.assign([] as Waiting[], { running: false })))
            queue.push({ change, anchor, deadline, resolve, reject })
            pump(key)
          }),
      )
    },
  }
}
