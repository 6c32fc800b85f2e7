import type { ManualClock } from '@shallot/testing'

/**
 * Awaits `work` while moving the manual clock on by `stepMs` per real tick, whenever something sleeps on it: every
 * wait of the layers (backoff, Retry-After, deadlines) is on that clock, so a 1 s Retry-After takes about 20 ticks.
 * The step is far below any deadline a test sets, so a request in flight is never cut by the clock racing ahead.
 */
export async function driven<T>(clock: ManualClock, work: Promise<T>, stepMs = 50): Promise<T> {
  let settled: { ok: true; value: T } | { ok: false; error: unknown } | undefined
  work.then(
    (value) => {
      settled = { ok: true, value }
    },
    (error: unknown) => {
      settled = { ok: false, error }
    },
  )
  while (settled === undefined) {
    await new Promise((resolve) => setTimeout(resolve, 1))
    if (clock.pending > 0) await clock.advance(stepMs)
  }
  if (!settled.ok) throw settled.error
  return settled.value
}
