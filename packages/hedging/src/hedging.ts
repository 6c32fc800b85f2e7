import {
  type AnyTool,
  abortReason,
  type DeferredSignal,
  LoopError,
  type Middleware,
  type Next,
  parseOptions,
  type ToolContext,
  ToolError,
} from '@shallot/core'
import { startTimer } from '@shallot/core/kit'
import { z } from 'zod'
import { AttemptSignal } from './attempt-signal.js'
import { LatencySample } from './latency-sample.js'
import { type HedgeBudgetStore, isHedgeBudgetStore, tokenBucket } from './token-bucket.js'

const MAX_DELAY_MS = 2_147_483_647
const delay = z.number().int().min(1).max(MAX_DELAY_MS)

const optionsShape = {
  /** A fixed hedge delay. Without it, the delay is the tool's recent `percentile` latency. */
  delayMs: delay.optional(),
  /** Which latency of the tool's recent sample becomes the delay, as a fraction. Default 0.95 (p95). */
  percentile: z.number().gt(0).lt(1).default(0.95),
  /** Latencies kept per tool. Default 100. */
  sampleSize: z.number().int().min(10).max(10_000).default(100),
  /** Successful calls a tool needs before its percentile is trusted; until then `initialDelayMs`. Default 20. */
  minSamples: z.number().int().min(1).max(10_000).default(20),
  /** The delay while a tool has fewer than `minSamples` latencies. Default 1,000 ms. */
  initialDelayMs: delay.default(1000),
  /** The shortest adaptive delay: a tool that usually answers at once is not hedged at once. Default 10 ms. */
  minDelayMs: delay.default(10),
  /** Which tools may be hedged, by effect. A `write` is never hedged: its second attempt would be a second write. */
  effects: z
    .array(z.enum(['read', 'idempotent'], { error: "must be 'read' or 'idempotent' (a write is never hedged)" }))
    .min(1)
    .default(['read', 'idempotent']),
  /** Tokens one hedge costs. Default 5 (what retry charges for a retry). */
  hedgeCost: z.number().min(0).max(1_000_000).default(5),
  /** Tokens a successful call puts back. Default 1 for the private bucket, 0 for a given store (retry refills that one). */
  successRefill: z.number().min(0).max(1_000_000).optional(),
  /** Tools with a latency sample (the least recently used is forgotten). Default 1000. */
  maxTools: z.number().int().min(1).max(1_000_000).default(1000),
}

function checkSamples(o: { minSamples: number; sampleSize: number }, issues: z.RefinementCtx): void {
  if (o.minSamples > o.sampleSize) {
    issues.addIssue({ code: 'custom', path: ['minSamples'], message: `must be at most sampleSize (${o.sampleSize})` })
  }
}

/**
 * Options of {@link hedging}.
 *
 * @example
 * hedgingOptionsSchema.parse({ delayMs: 200 }).effects // ['read', 'idempotent']
 */
export const hedgingOptionsSchema = z
  .strictObject({
    ...optionsShape,
    /** Where hedges take tokens; pass the retry layer's store to bound both by one budget. Default: a private bucket of 500. */
    retryBudget: z
      .custom<HedgeBudgetStore>(isHedgeBudgetStore, {
        error: 'must be a retry budget store (tryTake, refill, available), e.g. memoryRetryBudget()',
      })
      .optional(),
  })
  .superRefine(checkSamples)

/**
 * Hedging as a config file writes it: everything but `retryBudget`, which the host hands over as
 * `env.stores.retryBudget` (the store the retry layer takes too), so hedges and retries share it.
 *
 * @example
 * hedgingFileOptionsSchema.parse({ delayMs: 250, effects: ['read'] })
 */
export const hedgingFileOptionsSchema = z.strictObject(optionsShape).superRefine(checkSamples)

/** What {@link hedging} accepts. */
export type HedgingOptions = z.input<typeof hedgingOptionsSchema>

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

/**
 * For a `read` or `idempotent` tool that has not answered within a delay (a fixed `delayMs`, or
 * the tool's recent p95), starts a second attempt beside the first and takes whichever succeeds
 * first; the loser's signal aborts. A `write` is never hedged. Each hedge spends a step of the
 * run's budget and `hedgeCost` tokens of the retry budget; with no token left, no hedge.
 *
 * It must be the innermost layer: the first attempt goes through `next()` (the dispatcher), the
 * hedge calls the tool's `execute` itself (arguments validated the same way), because the onion
 * cannot run `next()` twice at once. Layers inside it would see only the first attempt. Since the
 * onion's contract is that a layer settles after its `next()`, a hedge that wins still waits for
 * the first attempt to stop: tools must honour their signal for hedging to save time.
 *
 * @example
 * const retryBudget = memoryRetryBudget()
 * const stack = createStack({
 *   tools: [search],
 *   middleware: [retry({ retryBudget }), errorClassifier(), timeout({ ms: 5000 }), hedging({ retryBudget })],
 * })
 */
export function hedging(options?: HedgingOptions): Middleware {
  const o = parseOptions('hedging()', hedgingOptionsSchema, options)
  const effects = new Set<string>(o.effects)
  const budget = o.retryBudget ?? tokenBucket(500)
  const refill = o.successRefill ?? (o.retryBudget === undefined ? 1 : 0)
  const samples = new Map<string, LatencySample>()

  function delayFor(tool: string): number {
    if (o.delayMs !== undefined) return o.delayMs
    const sample = samples.get(tool)
    if (sample === undefined || sample.count < o.minSamples) return o.initialDelayMs
    return Math.max(o.minDelayMs, sample.percentile(o.percentile) ?? o.initialDelayMs)
  }

  function record(tool: string, ms: number): void {
    if (o.delayMs !== undefined) return
    let sample = samples.get(tool)
    if (sample === undefined) {
      if (samples.size >= o.maxTools) samples.delete(samples.keys().next().value as string)
      sample = new LatencySample(o.sampleSize)
      samples.set(tool, sample)
    }
    sample.add(ms)
  }

  function settle(ctx: ToolContext, call: () => unknown, what: string): void {
    try {
      const done = call()
      if (typeof (done as PromiseLike<unknown> | undefined)?.then === 'function')
        (done as PromiseLike<unknown>).then(undefined, (err: unknown) => warn(ctx, err, what))
    } catch (err) {
      warn(ctx, err, what)
    }
  }

  async function take(ctx: ToolContext): Promise<boolean> {
    try {
      const taken = budget.tryTake(o.hedgeCost)
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

  function hedged(ctx: ToolContext, next: Next, tool: AnyTool, outer: AbortSignal | DeferredSignal): Promise<void> {
    const clock = ctx.clock
    const started = clock.now()
    const delayMs = delayFor(tool.name)
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
        if (!(await take(ctx))) return tell(ctx, 'hedging.skipped', { reason: 'retry_budget', delayMs })
        if (primaryDone || outer.aborted) {
          settle(ctx, () => budget.refill(o.hedgeCost), 'hedging: retry budget store failed to refill')
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
        record(tool.name, clock.now() - attempt.startedAt)
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
          record(tool.name, clock.now() - started)
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

  return function hedging(ctx: ToolContext, next: Next): Promise<void> {
    const tool = ctx.tool
    if (tool === undefined || !effects.has(tool.effect)) return next()
    const outer = ctx.currentSignal()
    if (outer.aborted) return Promise.reject(abortReason(outer))
    return hedged(ctx, next, tool, outer)
  }
}
