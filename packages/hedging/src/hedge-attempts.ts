import { type AnyTool, abortReason, type DeferredSignal, LoopError, type Next, type ToolContext, ToolError } from '@shallot/core'
import { startTimer } from '@shallot/core/kit'
import { AttemptSignal } from './attempt-signal.js'
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

const NONE = Symbol('none')
const SKIPPED = Symbol('skipped: no step left')

/** The reason a losing attempt's signal aborts with; never shown to the model. */
const lost = () =>
  new ToolError('hedge_lost', 'another attempt of this call answered first', {
    category: 'transient',
    retryable: false,
    safeToRepeat: true,
  })

function settle(ctx: ToolContext, call: () => unknown, what: string): void {
  try {
    const done = call()
    if (typeof (done as PromiseLike<unknown> | undefined)?.then === 'function')
      (done as PromiseLike<unknown>).then(undefined, (err: unknown) => warn(ctx, err, what))
  } catch (err) {
    warn(ctx, err, what)
  }
}

async function take(layer: HedgeLayer, ctx: ToolContext): Promise<boolean> {
  try {
    const taken = layer.budget.tryTake(layer.hedgeCost)
    return typeof taken === 'boolean' ? taken : await taken
  } catch (err) {
    // A budget that cannot be read fails closed: no hedge beats an unbounded storm.
    warn(ctx, err, 'hedging: retry budget store failed; not hedging')
    return false
  }
}

/** The hedge: the stack's own run of the tool beside next() (the call's one parse, one step, one execution counted). */
async function runHedge(ctx: ToolContext, _tool: AnyTool, signal: AbortSignal): Promise<unknown> {
  if (ctx.run.budget.remaining <= 0) throw SKIPPED
  return ctx.runTool(signal)
}

export function hedged(layer: HedgeLayer, ctx: ToolContext, next: Next, tool: AnyTool, outer: AbortSignal | DeferredSignal): Promise<void> {
  const { budget, refill } = layer
  const clock = ctx.clock
  const started = clock.now()
  const delayMs = layer.delayFor(tool.name)
  const first = new AttemptSignal(outer)
  return new Promise<void>((resolve, reject) => {
    let primaryDone = false
    let primaryError: unknown = NONE
    let hedge: { controller: AbortController; startedAt: number; done: boolean } | undefined
    let hedgeValue: unknown = NONE
    let finished = false
    const finish = (error: unknown) => {
      if (finished) return
      finished = true
      cancelTimer()
      if (error === NONE) {
        if (refill > 0) settle(ctx, () => budget.refill(refill), 'hedging: retry budget store failed to refill')
        resolve()
      } else reject(error)
    }

    const launch = async () => {
      if (primaryDone || outer.aborted) return
      if (ctx.run.budget.remaining <= 0) return tell(ctx, 'hedging.skipped', { reason: 'step_budget', delayMs })
      if (!(await take(layer, ctx))) return tell(ctx, 'hedging.skipped', { reason: 'retry_budget', delayMs })
      if (primaryDone || outer.aborted) {
        settle(ctx, () => budget.refill(layer.hedgeCost), 'hedging: retry budget store failed to refill')
        return
      }
      const controller = new AbortController()
      const attempt = { controller, startedAt: clock.now(), done: false }
      hedge = attempt
      tell(ctx, 'hedging.started', { delayMs })
      const signal = AbortSignal.any([outer instanceof AbortSignal ? outer : outer.signal, controller.signal])
      runHedge(ctx, tool, signal).then(
        (value) => onHedge(attempt, true, value),
        (err: unknown) => onHedge(attempt, false, err),
      )
    }

    const onHedge = (attempt: NonNullable<typeof hedge>, ok: boolean, outcome: unknown) => {
      attempt.done = true
      if (finished) return
      if (!ok) {
        if (outcome === SKIPPED) tell(ctx, 'hedging.skipped', { reason: 'step_budget', delayMs })
        else tell(ctx, 'hedging.failed', { code: ToolError.is(outcome) ? outcome.code : 'thrown' })
        if (primaryDone) finish(outer.aborted ? abortReason(outer) : primaryError)
        return
      }
      layer.record(tool.name, clock.now() - attempt.startedAt)
      tell(ctx, 'hedging.won', { by: 'hedge', afterMs: clock.now() - started })
      if (primaryDone) {
        ctx.result = { value: outcome }
        finish(NONE)
        return
      }
      // The onion settles a layer only after its next(): stop the first attempt and wait for it.
      hedgeValue = outcome
      first.lose(lost())
    }

    const onPrimary = (error: unknown) => {
      primaryDone = true
      if (outer instanceof AbortSignal) ctx.signal = outer
      else ctx.deferSignal(outer)
      if (hedgeValue !== NONE) {
        ctx.result = { value: hedgeValue }
        return finish(NONE)
      }
      if (error === NONE) {
        hedge?.controller.abort(lost())
        layer.record(tool.name, clock.now() - started)
        if (hedge !== undefined) tell(ctx, 'hedging.won', { by: 'first', afterMs: clock.now() - started })
        return finish(NONE)
      }
      // A hedge still running may yet succeed; anything that ends the call ends it now.
      if (hedge === undefined || hedge.done || LoopError.is(error) || outer.aborted) {
        hedge?.controller.abort(lost())
        return finish(outer.aborted ? abortReason(outer) : error)
      }
      primaryError = error
    }

    const cancelTimer = startTimer(clock, delayMs, () => {
      launch().catch((err: unknown) => warn(ctx, err, 'hedging: could not start a hedge'))
    })
    ctx.deferSignal(first)
    let work: Promise<void>
    try {
      work = next()
    } catch (err) {
      work = Promise.reject(err)
    }
    work.then(
      () => onPrimary(NONE),
      (err: unknown) => onPrimary(err),
    )
  })
}
