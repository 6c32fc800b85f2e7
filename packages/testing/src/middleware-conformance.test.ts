import { abortReason, defineMiddleware, LoopError, type Next, type ToolContext, ToolError } from '@shallot/core'
import { z } from 'zod'
import { middlewareConformance } from './conformance.js'

// A well-behaved sample: repeats transient failures a few times, waiting abortably on ctx.clock.
const retryTransient = defineMiddleware({
  name: 'retry-transient',
  options: z.strictObject({ times: z.number().int().min(0).max(3).default(2), waitMs: z.number().min(0).default(10) }),
  create: ({ times, waitMs }) =>
    async function retryTransient(ctx: ToolContext, next: Next) {
      for (let tries = 0; ; tries++) {
        if (ctx.signal.aborted) throw abortReason(ctx.signal)
        try {
          await next()
          return
        } catch (err) {
          if (!ToolError.is(err) || !err.retryable || tries >= times) throw err
        }
        await ctx.clock.sleep(waitMs, ctx.signal).catch(() => {})
        // A repeat is a new attempt: the terminal refuses to run the tool twice in one.
        ctx.attempt++
      }
    },
})

middlewareConformance(retryTransient, {
  validOptions: { times: 2 },
  abortOnEntry: true,
  invalidOptions: [{ times: -1 }, { times: 'often' }, { waitMs: 'soon' }],
})

// Each sample below breaks exactly the checks listed as known failures; the suite must catch it
// (an `it.fails` that passes), and every other check must still pass.

middlewareConformance(
  defineMiddleware({
    name: 'wraps-everything',
    options: z.strictObject({}),
    create: () =>
      async function wrapsEverything(ctx: ToolContext, next: Next) {
        if (ctx.signal.aborted) throw abortReason(ctx.signal)
        try {
          await next()
        } catch (err) {
          if (ctx.signal.aborted) throw abortReason(ctx.signal)
          throw new ToolError('wrapped', `failed: ${String(err)}`)
        }
      },
  }),
  { knownFailures: ['loop-error'] },
)

middlewareConformance(
  defineMiddleware({
    name: 'ignores-abort',
    options: z.strictObject({}),
    create: () =>
      async function ignoresAbort(ctx: ToolContext, next: Next) {
        if (ctx.signal.aborted) throw abortReason(ctx.signal)
        for (let tries = 0; ; tries++) {
          try {
            await next()
            return
          } catch (err) {
            // The bug this sample carries: a cancellation is taken for one more transient failure.
            const cancelled = LoopError.is(err) && err.kind === 'cancelled'
            if ((!ToolError.is(err) && !cancelled) || tries >= 2) throw err
          }
          ctx.attempt++
        }
      },
  }),
  { knownFailures: ['abort-mid-call'] },
)

middlewareConformance(
  defineMiddleware({
    name: 'forgets-listener',
    options: z.strictObject({}),
    create: () =>
      async function forgetsListener(ctx: ToolContext, next: Next) {
        if (ctx.signal.aborted) throw abortReason(ctx.signal)
        ctx.signal.addEventListener('abort', () => {})
        await next()
      },
  }),
  { knownFailures: ['no-leaks'] },
)

middlewareConformance(
  defineMiddleware({
    name: 'forgets-timer',
    options: z.strictObject({}),
    create: () =>
      async function forgetsTimer(ctx: ToolContext, next: Next) {
        if (ctx.signal.aborted) throw abortReason(ctx.signal)
        setTimeout(() => {}, 60_000)
        await next()
      },
  }),
  { knownFailures: ['no-leaks'] },
)

middlewareConformance(
  defineMiddleware({
    name: 'accepts-anything',
    options: z.object({ level: z.number().default(1) }).passthrough(),
    create: () =>
      async function acceptsAnything(ctx: ToolContext, next: Next) {
        if (ctx.signal.aborted) throw abortReason(ctx.signal)
        await next()
      },
  }),
  { knownFailures: ['options'] },
)

middlewareConformance(
  defineMiddleware({
    name: 'passes-aborted-calls-on',
    options: z.strictObject({}),
    create: () =>
      async function passesAbortedCallsOn(_ctx: ToolContext, next: Next) {
        await next()
      },
  }),
  { abortOnEntry: true, knownFailures: ['aborted-on-entry'] },
)
