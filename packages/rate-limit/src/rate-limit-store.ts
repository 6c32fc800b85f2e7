import { gcra, gcraRefund, type RateDecision, type RateReservation, type RateRule } from './gcra.js'

/**
 * Where a rate limit keeps its state, so a fleet of workers shares one limit (`@shallot/store-redis`
 * and `@shallot/store-postgres` ship one each: one Lua script, one SQL statement). `acquire` decides
 * one call atomically: admit it now, reserve it a place up to `rule.maxWaitMs` ahead, or refuse it
 * without taking anything. It may be async; when it throws, rejects, does not answer within the
 * layer's `storeTimeoutMs` or answers garbage (a `waitMs` that is not a finite number of 0 ms or more),
 * the layer fails open or closed as its `onStoreFailure` option says. The layer never trusts a wait
 * past its own bound: an admission with a `waitMs` over `rule.maxWaitMs` is refused (and its place
 * given back), and a refusal's wait is capped at `rule.maxWaitMs + rule.intervalMs`.
 *
 * @example
 * const store: RateLimitStore = { acquire: (key, rule, now) => myAtomicGcra(key, rule) }
 * rateLimit({ limit: 10, store })
 */
export interface RateLimitStore {
  /**
   * Decides one call under `key`. `now` is the caller's clock (`ctx.clock.now()`): an in-process store
   * runs on it; a shared store ignores it and uses one clock for the fleet (the server's).
   */
  acquire(key: string, rule: RateRule, now: number): RateDecision | Promise<RateDecision>
  /**
   * Optional: gives back the place `reservation` (from this store's own admitted answer) holds, when its
   * caller was cancelled while waiting. Atomically, and only when it is still the key's last reservation
   * and has not come due (else nothing changes): the key's TAT moves back one interval, never below now.
   * A second refund of the same reservation changes nothing. Answers whether the place was given back.
   * The layer calls it without waiting for it and logs a failure: a store without it, or one that
   * fails, keeps the place, which only admits fewer calls.
   */
  refund?(key: string, rule: RateRule, reservation: RateReservation, now: number): boolean | Promise<boolean>
}

/**
 * True when `value` has the method of a {@link RateLimitStore}.
 *
 * @example
 * isRateLimitStore(memoryRateLimitStore()) // true
 */
export function isRateLimitStore(value: unknown): value is RateLimitStore {
  return typeof value === 'object' && value !== null && typeof (value as Record<string, unknown>).acquire === 'function'
}

/** Options of {@link memoryRateLimitStore}. */
export interface MemoryRateLimitStoreOptions {
  /** Keys kept before the ones at rest are swept; past it with none at rest, the oldest go first. Default 10,000. */
  readonly maxKeys?: number
}

/**
 * The in-process store: one theoretical arrival time per key in a `Map` (any string is a key,
 * `__proto__` included), answered synchronously on the caller's clock. A key at rest (its TAT passed)
 * holds nothing a fresh key would not, so it is dropped when the map passes `maxKeys`; if every key is
 * busy the oldest entries go, which can only admit a call early, never hold one up.
 *
 * @example
 * const store = memoryRateLimitStore()
 * store.acquire('search', { intervalMs: 100, burst: 1, maxWaitMs: 0 }, 0) // { admitted: true, waitMs: 0 }
 */
export function memoryRateLimitStore(options: MemoryRateLimitStoreOptions = {}): RateLimitStore & { readonly size: number } {
  const maxKeys = options.maxKeys ?? 10_000
  if (!Number.isInteger(maxKeys) || maxKeys < 1) {
    throw new TypeError(`memoryRateLimitStore(): maxKeys must be a positive integer, got ${String(maxKeys)}`)
  }
  // seq: even while calls are admitted in order, odd once a refund happened (the next admit makes it even
  // again), so a refund-then-admit never looks like the state a reservation saw. New keys start past every
  // sequence handed out, so a key swept and made again never matches an old reservation either.
  const tats = new Map<string, { tat: number; seq: number }>()
  let fresh = 0

  function sweep(now: number): void {
    for (const [key, { tat }] of tats) if (tat <= now) tats.delete(key)
    for (const key of tats.keys()) {
      if (tats.size < maxKeys) break
      tats.delete(key)
    }
  }

  return {
    get size() {
      return tats.size
    },
    acquire(key, rule, now) {
      let entry = tats.get(key)
      const step = gcra(entry?.tat, now, rule)
      if (!step.admitted) return { admitted: false, waitMs: step.waitMs }
      if (entry === undefined) {
        if (tats.size >= maxKeys) sweep(now)
        entry = { tat: step.tat, seq: (fresh += 2) }
        tats.set(key, entry)
      } else {
        entry.tat = step.tat
        if (entry.seq % 2 === 1) entry.seq++
      }
      if (step.waitMs <= 0) return { admitted: true, waitMs: step.waitMs }
      return { admitted: true, waitMs: step.waitMs, reservation: { tat: step.tat, seq: entry.seq } }
    },
    refund(key, rule, reservation, now) {
      const entry = tats.get(key)
      const gap = entry === undefined ? -1 : entry.seq - reservation.seq
      const tat = gap === 0 || gap === 1 ? gcraRefund(entry?.tat, reservation.tat, now, rule) : undefined
      if (entry === undefined || tat === undefined) return false
      entry.tat = tat
      entry.seq = reservation.seq + 1
      return true
    },
  }
}
