import { type AnyTool, abortReason, LoopError, type Next, type ToolContext, ToolError } from '@shallot/core'
import { SignalLink, startTimer, untilAborted } from '@shallot/core/kit'
import type { HedgeBudgetStore } from './token-bucket.js'

/** What every call of one `hedging()` layer shares: its budget and its tools' recent latencies. */
export interface HedgeLayer {
  readonly budget: HedgeBudgetStore
  /** Tokens one hedge costs. */
  readonly hedgeCost: number
  /** Tokens a successful call puts back. */
  readonly refill: number
  /** The delay before a tool's call is hedged. */
  delayFor(tool: string): number
  /** Notes a successful attempt's latency. */
  record(tool: string, ms: number): void
}

/** How an attempt ended. */
type Outcome = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly error: unknown }

/** Emits from a callback outside the layer's own flow: a throwing listener must not leave the call unsettled. */
function tell(ctx: ToolContext, type: string, fields: Record<string, unknown>): void {
  try {
    ctx.emit(type, fields)
  } catch (err) {
    warn(ctx, err, `hedging: a listener of ${type} threw`)
  }
}

/** Logs from a callback; a throwing logger is swallowed, since nobody is left to tell. */
function warn(ctx: ToolContext, err: unknown, message: string): void {
  try {
    ctx.log.warn({ err }, message)
  } catch {
    // Nowhere left to report to.
  }
}

/** The reason a losing attempt's signal aborts with; never shown to the model. */
const lost = () =>
  new ToolError('hedge_lost', 'another attempt of this call answered first', {
    category: 'transient',
    retryable: false,
    safeToRepeat: true,
  })

async function outcomeOf(work: () => Promise<unknown>): Promise<Outcome> {
  try {
    return { ok: true, value: await work() }
  } catch (error) {
    return { ok: false, error }
  }
}

/** Puts tokens back; a store that fails to take them is logged, never thrown at the caller. */
async function refill(ctx: ToolContext, budget: HedgeBudgetStore, tokens: number): Promise<void> {
  try {
    await budget.refill(tokens)
  } catch (err) {
    warn(ctx, err, 'hedging: retry budget store failed to refill')
  }
}

async function take(layer: HedgeLayer, ctx: ToolContext): Promise<boolean> {
  try {
    return await layer.budget.tryTake(layer.hedgeCost)
  } catch (err) {
    // A budget that cannot be read fails closed: no hedge beats an unbounded storm.
    warn(ctx, err, 'hedging: retry budget store failed; not hedging')
    return false
  }
}

/**
 * Runs `next()` (the first attempt) and, if it has not answered within the tool's delay, a second
 * attempt beside it; the first success answers and the other attempt's signal aborts. The onion
 * settles a layer only after its next(), so a hedge that wins still waits for the first attempt to stop.
 */
export async function hedged(layer: HedgeLayer, ctx: ToolContext, next: Next, tool: AnyTool, outer: AbortSignal): Promise<void> {
  const clock = ctx.clock
  const started = clock.now()
  const delayMs = layer.delayFor(tool.name)
  // The first attempt's signal: it aborts with the call's, or when a hedge wins and the first attempt lost.
  const first = new SignalLink(outer)
  let firstEnded = false
  // Once the call has its answer, a late attempt's result changes nothing.
  let answered = false
  let hedge: { readonly link: SignalLink; readonly done: Promise<Outcome> } | undefined
  let hedgeWon: Outcome | undefined

  /** The hedge: the stack's own run of the tool beside next() (the call's one parse, one step, one execution counted). */
  async function runHedge(signal: AbortSignal): Promise<Outcome> {
    const startedAt = clock.now()
    const outcome = await outcomeOf(() => ctx.runTool(signal))
    if (answered) return outcome
    if (!outcome.ok) {
      tell(ctx, 'hedging.failed', { code: ToolError.is(outcome.error) ? outcome.error.code : 'thrown' })
      return outcome
    }
    hedgeWon = outcome
    layer.record(tool.name, clock.now() - startedAt)
    tell(ctx, 'hedging.won', { by: 'hedge', afterMs: clock.now() - started })
    if (!firstEnded) first.abort(lost())
    return outcome
  }

  async function launch(): Promise<void> {
    if (firstEnded || outer.aborted) return
    if (ctx.run.budget.remaining <= 0) return tell(ctx, 'hedging.skipped', { reason: 'step_budget', delayMs })
    if (!(await take(layer, ctx))) return tell(ctx, 'hedging.skipped', { reason: 'retry_budget', delayMs })
    // While the store answered, the first attempt may have ended, the run been cancelled or its last step spent.
    if (firstEnded || outer.aborted) return refill(ctx, layer.budget, layer.hedgeCost)
    if (ctx.run.budget.remaining <= 0) {
      tell(ctx, 'hedging.skipped', { reason: 'step_budget', delayMs })
      return refill(ctx, layer.budget, layer.hedgeCost)
    }
    const link = new SignalLink(outer)
    tell(ctx, 'hedging.started', { delayMs })
    hedge = { link, done: runHedge(link.signal) }
  }

  /** What answers the call once the first attempt has ended; throws when neither attempt succeeded. */
  async function answer(primary: Outcome): Promise<Outcome> {
    if (hedgeWon !== undefined) return hedgeWon
    if (primary.ok) {
      layer.record(tool.name, clock.now() - started)
      if (hedge !== undefined) tell(ctx, 'hedging.won', { by: 'first', afterMs: clock.now() - started })
      return primary
    }
    // A hedge still running may yet succeed; anything that ends the call ends it now.
    if (hedge !== undefined && !LoopError.is(primary.error) && !outer.aborted) {
      const second = await untilAborted(hedge.done, outer)
      if (second.ok) return second
    }
    throw outer.aborted ? abortReason(outer) : primary.error
  }

  const cancelTimer = startTimer(clock, delayMs, () => {
    launch().catch((err: unknown) => warn(ctx, err, 'hedging: could not start a hedge'))
  })
  ctx.signal = first
  const primary = await outcomeOf(next)
  firstEnded = true
  cancelTimer()
  first.release()
  ctx.signal = outer
  try {
    const result = await answer(primary)
    if (result === hedgeWon && result.ok) ctx.result = { value: result.value }
    if (layer.refill > 0) void refill(ctx, layer.budget, layer.refill)
  } finally {
    answered = true
    if (hedgeWon === undefined) hedge?.link.abort(lost())
    else hedge?.link.release()
  }
}
