import { abortReason, defineMiddleware, type ModelContext, type ModelNext, ToolError } from '@shallot/core'
import { z } from 'zod'
import { middlewareConformance } from './conformance.js'

/** Repeats a retryable model failure up to `times` more times, waiting abortably on ctx.clock. */
function retryModel(times: number, waitMs: number) {
  return async function retryModel(ctx: ModelContext, next: ModelNext) {
    for (let tries = 0; ; tries++) {
      if (ctx.signal.aborted) throw abortReason(ctx.signal)
      try {
        return await next()
      } catch (err) {
        if (!ToolError.is(err) || !err.retryable || tries >= times) throw err
      }
      await ctx.clock.sleep(waitMs, ctx.signal).catch(() => {})
      ctx.attempt++
    }
  }
}

// A well-behaved layer of model calls only: the tool checks are skipped, every model check passes.
middlewareConformance(
  defineMiddleware({
    name: 'retry-model',
    options: z.strictObject({ times: z.number().int().min(0).max(3).default(2), waitMs: z.number().min(0).default(10) }),
    createModel: ({ times, waitMs }) => retryModel(times, waitMs),
  }),
  { validOptions: { times: 2 }, invalidOptions: [{ times: -1 }, { waitMs: 'soon' }] },
)

// Each sample below breaks exactly the model checks listed as known failures; the suite must catch it.

middlewareConformance(
  defineMiddleware({
    name: 'model-wraps-everything',
    options: z.strictObject({}),
    createModel: () =>
      async function wrapsEverything(ctx: ModelContext, next: ModelNext) {
        try {
          await next()
        } catch (err) {
          if (ctx.signal.aborted) throw abortReason(ctx.signal)
          throw new ToolError('wrapped', `failed: ${String(err)}`)
        }
      },
  }),
  { knownFailures: ['model-loop-error'] },
)

middlewareConformance(
  defineMiddleware({
    name: 'model-ignores-abort',
    options: z.strictObject({}),
    createModel: () =>
      async function ignoresAbort(ctx: ModelContext, next: ModelNext) {
        for (let tries = 0; ; tries++) {
          try {
            return await next()
          } catch (err) {
            // Even the run's cancellation is retried: the run ends only when the tries run out.
            if (tries >= 2) throw err
          }
          await ctx.clock.sleep(10).catch(() => {})
        }
      },
  }),
  { knownFailures: ['model-abort-mid-call', 'model-abort-mid-wait'] },
)

middlewareConformance(
  defineMiddleware({
    name: 'model-races-next',
    options: z.strictObject({}),
    createModel: () =>
      async function racesNext(_ctx: ModelContext, next: ModelNext) {
        const first = next()
        const second = next().catch(() => {})
        try {
          await first
        } finally {
          await second
        }
      },
  }),
  { knownFailures: ['model-sequential-next', 'model-abort-mid-call'] },
)
