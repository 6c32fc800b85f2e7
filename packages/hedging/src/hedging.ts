import { abortReason, type Middleware, type Next, parseOptions, type ToolContext } from '@shallot/core'
import { z } from 'zod'
import { type HedgeLayer, hedged } from './hedge-attempts.js'
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

  const layer: HedgeLayer = { budget, hedgeCost: o.hedgeCost, refill, delayFor, record }

  return function hedging(ctx: ToolContext, next: Next): Promise<void> {
    const tool = ctx.tool
    if (tool === undefined || !effects.has(tool.effect)) return next()
    const outer = ctx.signal
    if (outer.aborted) return Promise.reject(abortReason(outer))
    return hedged(layer, ctx, next, tool, outer)
  }
}
