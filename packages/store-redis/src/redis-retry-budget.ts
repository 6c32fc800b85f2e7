import { type RetryBudgetStore, retryBudgetRefills } from '@shallot/retry'
import type { RedisStoreContext } from './redis-store-context.js'
import { redisUnavailable } from './store-unavailable.js'
import { budgetReplySchema } from './stored-values.js'

/**
 * The retry budget of `redisStores()`: one token bucket for the fleet.
 *
 * @example
 * const { retryBudget } = redisStores({ client })
 * await retryBudget.available() // 500 until someone retries
 */
export interface RedisRetryBudget extends RetryBudgetStore {
  readonly name: string
  readonly capacity: number
  tryTake(tokens: number): Promise<boolean>
  refill(tokens: number): Promise<void>
  available(): Promise<number>
}

/**
 * One token bucket shared by every worker (`retry({ retryBudget })`), taken from by a Lua script so
 * concurrent workers never overspend it: a take is always a round trip, and what one worker spends the
 * next take anywhere sees. Refills (one per successful call) are held in this worker and written in one
 * batch, with its next take or on its first refill once the oldest held is `refillFlushMs` old, so a
 * healthy call costs Redis nothing; meanwhile the fleet's bucket is short of them (stricter, never
 * looser). Redis keeps what was spent, so a missing key is a full bucket. A take that answers after
 * its deadline gives its tokens back. A bucket that cannot be read fails closed: the take that finds
 * it is refused and the bucket is rewritten as empty, so retries resume as successes refill it (never
 * a silent reset to full).
 *
 * @example
 * const { retryBudget } = redisStores({ client, retryBudget: { capacity: 200 } })
 * createStack({ tools, middleware: [retry({ retryBudget })] })
 */
export function redisRetryBudget(
  context: RedisStoreContext & { readonly name: string; readonly capacity: number; readonly refillFlushMs: number },
): RedisRetryBudget {
  const { commands, keys, bounded, clock, log, name, capacity } = context
  const key = keys.retryBudget(name)
  const refills = retryBudgetRefills(clock, context.refillFlushMs)

  function parse(op: string, reply: unknown): boolean {
    const parsed = budgetReplySchema.safeParse(reply)
    if (!parsed.success) throw redisUnavailable(op, 'Redis answered something the store does not understand', parsed.error)
    if (parsed.data[1] === 1)
      log.warn({ key, op }, 'retry budget in Redis was corrupt; rewritten as empty, so no retry until successes refill it')
    return parsed.data[0] === 1
  }

  // A refill whose write failed is not held again: the bucket stays short of it, stricter rather than looser.
  function write(tokens: number): Promise<void> {
    return bounded('retryBudget.refill', async () => {
      parse('retryBudget.refill', await commands.budgetRefill(key, capacity, tokens))
    })
  }

  function refill(tokens: number): Promise<void> {
    const due = refills.add(tokens)
    return due === 0 ? Promise.resolve() : write(due)
  }

  return {
    name,
    capacity,
    tryTake(tokens) {
      // The take carries the held refills: this worker's successes count before its retry is priced.
      const carried = refills.takeAll()
      return bounded(
        'retryBudget.tryTake',
        async () => parse('retryBudget.tryTake', await commands.budgetTake(key, capacity, tokens, carried)),
        (taken) => {
          if (taken) refill(tokens).catch((err: unknown) => log.warn({ key, err }, 'could not give back tokens taken after the deadline'))
        },
      )
    },
    refill,
    available() {
      return bounded('retryBudget.available', async () => {
        const raw = await commands.budgetRead(key)
        const spent = typeof raw === 'string' ? Number(raw) : Number.NaN
        if (typeof raw !== 'string' || raw.trim() === '' || !Number.isFinite(spent) || spent < 0) {
          log.warn(
            { key, op: 'retryBudget.available' },
            'retry budget in Redis is corrupt; reported as empty (the next take rewrites it so)',
          )
          return 0
        }
        // What this worker would see: the bucket, with the refills it holds put back.
        return Math.max(0, capacity - Math.max(0, spent - refills.held))
      })
    },
  }
}
