import type { BreakerState } from './breaker-state.js'
import { mapTimes, READ_MARGIN_MS, timeMap } from './breaker-times.js'

type Change = (current: BreakerState | undefined) => BreakerState

/** The updates of one key that a shared store handles together: one read, one write. */
export interface UpdateRound {
  /** True once every caller of the round has given up (passed its deadline): nothing of theirs may be written. */
  readonly abandoned: boolean
  /**
   * Applies the changes of the callers still waiting, in call order and each in its caller's clock,
   * to `stored` (in the store's clock, read when the store's clock said `storeNow`). Answers the
   * state to write, in the store's clock, or `stored` itself when no change changed anything. Call
   * it again after a write conflict: the callers get the answers of the last call.
   */
  apply(stored: BreakerState | undefined, storeNow: number): BreakerState | undefined
}

/** One update call waiting for its key's next round. */
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

/**
 * For a shared `BreakerStore` that keeps times in its server's clock: concurrent updates of one key
 * in this process go in one round, so contention grows with workers, not calls. `run` reads the
 * key's state, calls `round.apply` and writes what it answers; the callers are answered only once
 * `run` resolves (so nobody acts on a state that was not written), and all of them are rejected
 * with its error when it rejects. Times cross between the clocks as ages ({@link timeMap}). The
 * function it returns is the store's `update`, with the caller's deadline: a caller past it has
 * decided on local state, so its change is left out of later rounds and it rejects with the
 * deadline's reason.
 *
 * @example
 * const enqueue = updateRounds(clock, async (key, round) => {
 *   const { state, serverNow } = await lockAndRead(key)
 *   const next = round.apply(state, serverNow)
 *   if (next !== state) await write(key, next)
 * })
 * const update = (key, change) => bounded('circuit-breaker.update', (deadline) => enqueue(key, change, deadline))
 */
export function updateRounds(
  clock: { now(): number },
  run: (key: string, round: UpdateRound) => Promise<void>,
): (key: string, change: Change, deadline: AbortSignal) => Promise<BreakerState> {
  const queues = new Map<string, Queue>()

  async function round(key: string, batch: readonly Waiting[]): Promise<void> {
    let live: readonly Waiting[] = []
    let answers: Array<{ state: BreakerState } | { error: unknown }> = []
    const handle: UpdateRound = {
      get abandoned() {
        return batch.every((w) => w.deadline.aborted)
      },
      apply(stored, storeNow) {
        live = batch.filter((w) => !w.deadline.aborted)
        answers = []
        let storeState = stored
        for (const waiting of live) {
          const map = timeMap(waiting.anchor, storeNow)
          const current = storeState === undefined ? undefined : mapTimes(storeState, map.toLocal)
          try {
            const next = waiting.change(current)
            answers.push({ state: next })
            if (next !== current) storeState = mapTimes(next, map.toStore)
          } catch (error) {
            answers.push({ error })
          }
        }
        return storeState
      },
    }
    // A caller past its deadline gets its deadline's reason, so its promise settles whoever waits on it.
    const unanswered = (w: Waiting) =>
      w.deadline.aborted ? w.deadline.reason : new Error(`the breaker store ended a round of "${key}" without applying its change`)
    if (handle.abandoned) {
      for (const w of batch) w.reject(unanswered(w))
      return
    }
    await run(key, handle)
    for (const w of batch) {
      const answer = answers[live.indexOf(w)]
      if (answer !== undefined && 'state' in answer) w.resolve(answer.state)
      else w.reject(answer === undefined ? unanswered(w) : answer.error)
    }
  }

  function pump(key: string): void {
    const queue = queues.get(key)
    if (queue === undefined || queue.length === 0 || queue.running) return
    const batch = queue.splice(0)
    queue.running = true
    round(key, batch)
      .catch((err: unknown) => {
        for (const w of batch) w.reject(err)
      })
      .finally(() => {
        queue.running = false
        if (queue.length === 0) queues.delete(key)
        else pump(key)
      })
  }

  return (key, change, deadline) => {
    const anchor = clock.now() - READ_MARGIN_MS
    return new Promise<BreakerState>((resolve, reject) => {
      let queue = queues.get(key)
      if (queue === undefined) queues.set(key, (queue = Object.assign([] as Waiting[], { running: false })))
      queue.push({ change, anchor, deadline, resolve, reject })
      pump(key)
    })
  }
}
