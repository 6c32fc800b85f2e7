import type { ToolContext } from '@shallot/core'

/** Why the timeout layer stopped waiting. */
export type StopReason = 'expired' | 'cancelled'

/**
 * How a call settled once nobody waited for it: with a value, with an error of its own, or
 * `stopped`: with the very abort reason it was handed (the tool gave up as asked, or the terminal
 * dropped its late value).
 */
export type LateOutcome = 'resolved' | 'rejected' | 'stopped'

export interface LateSettle {
  readonly attempt: number
  readonly timeoutMs: number
  readonly after: StopReason | undefined
  readonly outcome: LateOutcome
  readonly lateByMs: number
  /** The error's code or name, never its text: it is logged, and the run has moved on. */
  readonly error: string | undefined
}

/**
 * Logs a late settle as a warning and emits it as `timeout.late`. It runs outside every layer's
 * control flow, so it never throws: a throwing logger or listener would otherwise surface as an
 * unhandled rejection.
 */
export function reportLate(ctx: ToolContext, late: LateSettle): void {
  try {
    ctx.log.warn({ ...late }, 'late tool result ignored')
    ctx.emit('timeout.late', { ...late })
  } catch {
    // Nothing is left to report to: the call this belonged to has settled.
  }
}

/** A short, safe label for a thrown value: its string `code`, else its `name`, else its type. */
export function errorLabel(err: unknown): string {
  try {
    const { code, name } = err as { code?: unknown; name?: unknown }
    if (typeof code === 'string') return code
    if (typeof name === 'string') return name
  } catch {
    // A hostile object (a throwing getter, a Proxy): its type is all we can say.
  }
  return err === null ? 'null' : typeof err
}
