import { type AnyTool, abortReason, type ToolContext } from '@shallot/core'
import { canonicalJson } from '@shallot/core/kit'

/** How a reconciliation is bounded: questions, the wait before the second (doubled after), and each question's time. */
export interface ReconcileLimits {
  readonly attempts: number
  readonly delayMs: number
  readonly timeoutMs: number
  /** The whole reconciliation ends by then (stack clock): it must end while the record is still the caller's. */
  readonly withinMs: number
}

/** What the reconciliation learned: the result as JSON text (`applied`), `not_applied`, or that it could not tell. */
export type Reconciled =
  | { readonly outcome: 'applied'; readonly json: string }
  | { readonly outcome: 'not_applied'; readonly attempts: number }
  | { readonly outcome: 'unknown'; readonly attempts: number; readonly hint: string | undefined }

/** One question's answer, as the trace records it. */
type Heard =
  | { readonly answer: 'applied'; readonly json: string }
  | { readonly answer: 'not_applied' }
  | { readonly answer: 'unknown'; readonly hint: string | undefined }
  | { readonly answer: 'threw' | 'timed_out' | 'malformed'; readonly problem: string }

const TIMED_OUT = Symbol('timed out')

/**
 * Reads a reconciler's answer once, field by field, inside the caller's try: a getter that throws, a
 * revoked Proxy, or an answer of the wrong shape is `malformed`; `applied` needs a JSON `result`.
 */
function heard(answer: unknown): Heard {
  if (typeof answer !== 'object' || answer === null)
    return { answer: 'malformed', problem: `answered ${answer === null ? 'null' : typeof answer}` }
  const status = (answer as { status?: unknown }).status
  if (status === 'not_applied') return { answer: 'not_applied' }
  if (status === 'unknown') {
    const hint = (answer as { hint?: unknown }).hint
    return { answer: 'unknown', hint: typeof hint === 'string' && hint.trim() !== '' ? hint : undefined }
  }
  if (status !== 'applied') return { answer: 'malformed', problem: `answered the status ${String(JSON.stringify(status)).slice(0, 40)}` }
  const result = (answer as { result?: unknown }).result
  if (result === undefined) return { answer: 'malformed', problem: 'answered applied without a result' }
  // One plain copy: what the caller gets and what the store keeps are this text, never the reconciler's objects.
  return { answer: 'applied', json: canonicalJson(result) }
}

/** One question to the reconciler: the key, which question this is, how long it may take, and when the attempt was sent. */
interface Question {
  readonly key: string
  readonly attempt: number
  readonly timeoutMs: number
  readonly sentAt: number | undefined
}

/** Asks once, bounded by `timeoutMs` and the call's signal. Throws only the call's own abort reason. */
async function askOnce(ctx: ToolContext, tool: AnyTool, { key, attempt, timeoutMs, sentAt }: Question): Promise<Heard> {
  const reconcile = tool.reconcile
  if (reconcile === undefined) return { answer: 'malformed', problem: 'the tool has no reconcile' }
  const outer = ctx.signal
  if (outer.aborted) throw abortReason(outer)
  const controller = new AbortController()
  const onAbort = () => controller.abort(abortReason(outer))
  outer.addEventListener('abort', onAbort, { once: true })
  try {
    const asking = { call: ctx.call, signal: controller.signal, idempotencyKey: key, attempt, log: ctx.log }
    const context = sentAt === undefined ? asking : { ...asking, sentAt }
    const asked = Promise.resolve().then(() => reconcile(ctx.args, context))
    const timer = ctx.clock.sleep(timeoutMs, controller.signal).then(
      () => TIMED_OUT,
      () => TIMED_OUT,
    )
    let answer: unknown
    try {
      answer = await Promise.race([asked, timer])
    } catch (err) {
      if (outer.aborted) throw abortReason(outer)
      return { answer: 'threw', problem: err instanceof Error ? err.message.slice(0, 200) : 'threw a non-Error' }
    }
    if (outer.aborted) throw abortReason(outer)
    if (answer === TIMED_OUT) return { answer: 'timed_out', problem: `no answer within ${timeoutMs} ms` }
    try {
      return heard(answer)
    } catch {
      return { answer: 'malformed', problem: 'reading the answer threw' }
    }
  } finally {
    outer.removeEventListener('abort', onAbort)
    // Ends the timer and tells a reconciler still working that nobody listens any more.
    controller.abort(new Error('the reconciliation is over'))
  }
}

/**
 * Asks the tool's `reconcile` whether the attempt under `key` took effect: up to `attempts` times
 * while the answer is unknown (a throw, a timeout or a malformed answer counts as unknown), with
 * backoff on the stack clock, one step of the run's budget per question, and never past `withinMs`.
 * Every question is traced (`idempotency.reconcile_attempt`), the outcome too (`idempotency.reconciled`).
 * `sentAt` (wall-clock ms), when known, reaches the reconciler: when the attempt in question was sent.
 * Throws only what ends the call anyway: the call's abort reason, or the budget's `LoopError`.
 *
 * @example
 * const reconciled = await askReconciler(ctx, tool, key, { attempts: 3, delayMs: 1000, timeoutMs: 10_000, withinMs: 60_000 }, sentAt)
 */
export async function askReconciler(
  ctx: ToolContext,
  tool: AnyTool,
  key: string,
  limits: ReconcileLimits,
  sentAt?: number,
): Promise<Reconciled> {
  const end = ctx.clock.now() + limits.withinMs
  let hint: string | undefined
  let attempts = 0
  for (let attempt = 1; attempt <= limits.attempts; attempt++) {
    if (attempt > 1) {
      const delay = limits.delayMs * 2 ** (attempt - 2)
      if (ctx.clock.now() + delay >= end) break
      try {
        await ctx.clock.sleep(delay, ctx.signal)
      } catch (err) {
        throw ctx.signal.aborted ? abortReason(ctx.signal) : err
      }
    }
    const left = end - ctx.clock.now()
    if (left <= 0) break
    ctx.run.budget.spend(`reconcile:${tool.name}`)
    attempts = attempt
    const said = await askOnce(ctx, tool, { key, attempt, timeoutMs: Math.min(limits.timeoutMs, left), sentAt })
    const { json: _json, ...fields } = said as { json?: string }
    ctx.emit('idempotency.reconcile_attempt', { key, attempt, ...fields })
    if (said.answer !== 'applied' && said.answer !== 'not_applied') {
      if (said.answer === 'unknown') hint = said.hint
      ctx.log.info({ key, attempt, ...fields }, 'the reconciler could not tell whether the write took effect')
      continue
    }
    ctx.emit('idempotency.reconciled', { key, outcome: said.answer, attempts })
    return said.answer === 'applied' ? { outcome: 'applied', json: said.json } : { outcome: 'not_applied', attempts }
  }
  ctx.emit('idempotency.reconciled', { key, outcome: 'unknown', attempts })
  return { outcome: 'unknown', attempts, hint }
}
