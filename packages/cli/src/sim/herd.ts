import { type ManualClock, manualClock, seededRandom } from '@shallot/testing'

export type HerdBackoff = 'none' | 'exponential' | 'equal-jitter' | 'full-jitter' | 'decorrelated-jitter'

export interface HerdOptions {
  clients: number
  baseMs: number
  capMs: number
  seed: number
  /** Virtual ms of one write; of the writes that start in the same slot, the first wins and the rest conflict and retry. */
  slotMs: number
}

export interface HerdResult {
  backoff: HerdBackoff
  /** Every attempt any client made, successful or not. */
  calls: number
  /** Virtual ms until the last client finished. */
  completionMs: number
}

function delayFor(backoff: HerdBackoff, attempt: number, previous: number, options: HerdOptions, random: () => number): number {
  const exp = Math.min(options.capMs, options.baseMs * 2 ** Math.min(attempt, 30))
  switch (backoff) {
    case 'none':
      return 0
    case 'exponential':
      return exp
    case 'equal-jitter':
      return exp / 2 + random() * (exp / 2)
    case 'full-jitter':
      return random() * exp
    case 'decorrelated-jitter':
      return Math.min(options.capMs, options.baseMs + random() * (previous * 3 - options.baseMs))
  }
}

/**
 * N clients each need one successful write to a resource that admits one write per slot (an
 * optimistic-concurrency table, after the AWS Architecture Blog's 2015 study). Writes that collide
 * in the same slot lose to the first one and back off. Counts calls and completion time per backoff.
 */
export async function herd(backoff: HerdBackoff, options: HerdOptions): Promise<HerdResult> {
  const clock: ManualClock = manualClock()
  const random = seededRandom(options.seed)
  let calls = 0
  let finished = 0
  const slots = new Map<number, number>()
  // Each client: attempt → wait for its slot to close → succeed if alone in the slot, else back off.
  const client = async (id: number) => {
    let attempt = 0
    let previous = options.baseMs
    for (;;) {
      calls++
      const slot = Math.floor(clock.now() / options.slotMs)
      if (!slots.has(slot)) slots.set(slot, id)
      await clock.sleep(options.slotMs - (clock.now() % options.slotMs))
      if (slots.get(slot) === id) break
      const delay = Math.max(backoff === 'none' ? 0 : 1, delayFor(backoff, attempt, previous, options, random))
      previous = Math.max(options.baseMs, delay)
      attempt++
      await clock.sleep(delay)
    }
    finished = Math.max(finished, clock.now())
  }
  const done = Promise.all(Array.from({ length: options.clients }, (_, id) => client(id)))
  await clock.runAll({ maxSteps: 10_000_000 })
  await done
  return { backoff, calls, completionMs: finished }
}

export const HERD_BACKOFFS: readonly HerdBackoff[] = ['none', 'exponential', 'equal-jitter', 'full-jitter', 'decorrelated-jitter']
