import { abortReason, type ToolContext } from '@shallot/core'
import { onAbort, startTimer } from '@shallot/core/kit'

/** What {@link settleWithin} resolves with when `timeoutMs` passed first. */
export const TIMED_OUT: unique symbol = Symbol('no answer in time')

const noop = () => {}

/**
 * Waits for `pending` at most `timeoutMs` on the call's clock, and only while the call's signal
 * stands: resolves or rejects as `pending` does, resolves with {@link TIMED_OUT} when the time
 * passes first, and rejects with the abort's reason when the call is cancelled first. What
 * `pending` does later changes nothing (a late rejection is never unhandled), and no timer or
 * listener outlives the wait.
 *
 * @example
 * const verdict = await settleWithin(ctx, rule.conditions(args, ctx), 10_000)
 * if (verdict === TIMED_OUT) return refused(ctx, rule, 'its check did not answer in time')
 */
export function settleWithin<T>(ctx: ToolContext, pending: Promise<T>, timeoutMs: number): Promise<T | typeof TIMED_OUT> {
  const signal = ctx.signal
  if (signal.aborted) {
    pending.catch(noop)
    return Promise.reject(abortReason(signal))
  }
  return new Promise((resolve, reject) => {
    let settled = false
    let off = noop
    let cancelTimer = noop
    const finish = (settle: () => void) => {
      if (settled) return
      settled = true
      cancelTimer()
      off()
      settle()
    }
    cancelTimer = startTimer(ctx.clock, timeoutMs, () => finish(() => resolve(TIMED_OUT)))
    off = onAbort(signal, () => finish(() => reject(abortReason(signal))))
    pending.then(
      (value) => finish(() => resolve(value)),
      (error: unknown) => finish(() => reject(error)),
    )
  })
}
