import type { Json, RunContext } from '@shallot/core'

/** Where the calls whose retries ran out live in `run.state`: plain JSON, so a checkpointed run keeps them. */
export const EXHAUSTED_STATE_KEY = 'shallot.retry.exhausted'

/** The most fingerprints kept per run; the oldest is forgotten first. */
const MAX_REMEMBERED = 256

function listOf(run: RunContext): string[] {
  const value: Json | undefined = run.state[EXHAUSTED_STATE_KEY]
  // A planted or hand-edited value is read as an empty list: the worst it can cost is a retry.
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : []
}

/**
 * Calls of one run whose retries ran out (identified by `ctx.fingerprint`: tool + canonical arguments).
 * An identical call later in the run is not retried again: the upstream already failed every attempt,
 * and the model's own repeat is the one request it gets.
 *
 * @example
 * const exhausted = exhaustedCalls(ctx.run)
 * if (exhausted.has(ctx.fingerprint)) stop('exhausted_in_run')
 */
export function exhaustedCalls(run: RunContext) {
  return {
    has(fingerprint: string): boolean {
      return listOf(run).includes(fingerprint)
    },
    add(fingerprint: string): void {
      const list = listOf(run).filter((item) => item !== fingerprint)
      list.push(fingerprint)
      run.state[EXHAUSTED_STATE_KEY] = list.slice(-MAX_REMEMBERED)
    },
    delete(fingerprint: string): void {
      const list = listOf(run)
      if (list.includes(fingerprint)) run.state[EXHAUSTED_STATE_KEY] = list.filter((item) => item !== fingerprint)
    },
  }
}
