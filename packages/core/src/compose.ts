import { LoopError } from './errors.js'
import type { AnyTool, Logger, Middleware, Next, RunContext, ToolContext } from './types.js'

/** A middleware broke the onion's contract (called `next()` twice at once, or returned before `next()` settled). */
export class MiddlewareUsageError extends Error {
  override readonly name = 'MiddlewareUsageError'
  readonly code = 'middleware_usage'
}

function nameOf(fn: unknown): string {
  const name = typeof fn === 'function' ? fn.name : ''
  return name ? `middleware "${name}"` : 'an anonymous middleware'
}

function describeValue(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  // Never print a function's source: it can be long and says nothing the name does not.
  if (typeof value === 'function') return `function ${value.name || '(anonymous)'}`
  return typeof value === 'object' ? 'an object' : `${typeof value} ${String(value)}`
}

const noop = () => {}

/**
 * The flag a middleware carries when it keeps the onion's contract by construction: it returns a
 * promise, never calls `next()` while an earlier `next()` is pending, and settles only after its
 * `next()` settled, or, if it stops waiting (a deadline), takes care of the abandoned call itself.
 * `compose` calls such a layer Koa style, with a plain `next`, and skips the bookkeeping that catches
 * those mistakes in other middleware. A registered symbol, so a layer can carry it without importing
 * core's value (`fn[Symbol.for('shallot.middleware.trusted')] = true`).
 *
 * @example
 * const layer = async (ctx, next) => { await next() }
 * layer[TRUSTED_MIDDLEWARE] = true // what trustedMiddleware(layer) does
 */
export const TRUSTED_MIDDLEWARE: unique symbol = Symbol.for('shallot.middleware.trusted') as never

type Flagged = Middleware & { [TRUSTED_MIDDLEWARE]?: unknown }

/**
 * Marks `fn` as keeping the onion's contract (see {@link TRUSTED_MIDDLEWARE}) and returns it. Only
 * for layers whose every path has been read for that: a trusted layer that breaks the contract is
 * no longer told so by a {@link MiddlewareUsageError}.
 *
 * @example
 * const timing = trustedMiddleware(async function timing(ctx, next) {
 *   const started = ctx.clock.now()
 *   try { await next() } finally { ctx.log.debug({ ms: ctx.clock.now() - started }, 'tool call') }
 * })
 */
export function trustedMiddleware<M extends Middleware>(fn: M): M {
  ;(fn as Flagged)[TRUSTED_MIDDLEWARE] = true
  return fn
}

/**
 * Whether `fn` carries the {@link TRUSTED_MIDDLEWARE} flag.
 *
 * @example
 * isTrustedMiddleware(retry()) // true: shallot's own layers are trusted
 * isTrustedMiddleware(async (ctx, next) => next()) // false
 */
export function isTrustedMiddleware(fn: unknown): boolean {
  return typeof fn === 'function' && (fn as Flagged)[TRUSTED_MIDDLEWARE] === true
}

/**
 * Calls `next` and always answers with a promise: a throw becomes a rejection and an odd return a
 * resolved promise. For a layer that reacts to `next()`'s promise instead of awaiting it.
 *
 * @example
 * return callNext(next).then(undefined, (err) => { throw shape(err) })
 */
export function callNext(next: Next): Promise<void> {
  try {
    return Promise.resolve(next())
  } catch (err) {
    return Promise.reject(err)
  }
}

/**
 * The final `next` of a composed call: called plainly, its throw or odd return turned into a promise.
 * It is handed the call's context (a `Next` that takes no argument ignores it), so the stack's
 * terminal is one shared function and not a closure per call.
 */
function callLast(last: Next | undefined, ctx: ToolContext): Promise<void> {
  if (last === undefined) return Promise.resolve()
  try {
    return Promise.resolve((last as (ctx: ToolContext) => Promise<void> | void)(ctx))
  } catch (err) {
    return Promise.reject(err)
  }
}

/**
 * Composes middlewares into one, Koa style: the first is outermost, errors propagate outward,
 * and the result is itself a middleware, so stacks nest.
 *
 * Unlike koa-compose, a layer may call `next()` again once the previous call settled (that is how
 * retry re-runs the inner layers). Calling `next()` while an earlier call is pending, or resolving
 * while a `next()` is still pending, is a {@link MiddlewareUsageError}. Layers marked with
 * {@link trustedMiddleware} (shallot's own) are called without that bookkeeping.
 *
 * @example
 * const stack = compose([panicCatcher(), retry(), timeout({ ms: 5000 })])
 * await stack(ctx, terminal)
 */
export function compose(middleware: readonly Middleware[]): Middleware {
  if (!Array.isArray(middleware)) {
    throw new TypeError(`compose() takes an array of middleware functions, got ${describeValue(middleware)}`)
  }
  middleware.forEach((fn, i) => {
    if (typeof fn !== 'function') {
      throw new TypeError(`compose(): middleware[${i}] must be a function (ctx, next) => Promise<void>, got ${describeValue(fn)}`)
    }
  })
  const layers = [...middleware]
  const trusted = layers.map(isTrustedMiddleware)
  const count = layers.length

  function run(ctx: ToolContext, last: Next | undefined, i: number): Promise<void> {
    if (i >= count) return callLast(last, ctx)
    const fn = layers[i] as Middleware
    if (trusted[i]) {
      try {
        return fn(ctx, () => run(ctx, last, i + 1))
      } catch (err) {
        return Promise.reject(err)
      }
    }
    return guarded(fn, ctx, last, i)
  }

  function guarded(fn: Middleware, ctx: ToolContext, last: Next | undefined, i: number): Promise<void> {
    let pending: Promise<void> | undefined
    const next: Next = () => {
      if (pending !== undefined) {
        return Promise.reject(
          new MiddlewareUsageError(
            `${nameOf(fn)} called next() while its previous next() was still pending; await next() before calling it again`,
          ),
        )
      }
      const inner = run(ctx, last, i + 1).then(
        () => {
          pending = undefined
        },
        (err: unknown) => {
          pending = undefined
          throw err
        },
      )
      pending = inner
      return inner
    }
    let out: Promise<void>
    try {
      out = Promise.resolve(fn(ctx, next))
    } catch (err) {
      return Promise.reject(err)
    }
    return out.then(
      () => {
        if (pending !== undefined) {
          pending.catch(noop)
          throw new MiddlewareUsageError(`${nameOf(fn)} returned before its next() settled; await next() (or return its promise)`)
        }
      },
      (err: unknown) => {
        // The layer gave up on its inner call; whatever that call does later must not surface as an unhandled rejection.
        if (pending !== undefined) pending.catch(noop)
        throw err
      },
    )
  }

  // The composed middleware keeps the contract whatever its layers do (the untrusted ones are guarded), so an outer compose may trust it.
  const composed: Middleware = trustedMiddleware(function composed(ctx: ToolContext, last?: Next): Promise<void> {
    return run(ctx, last, 0)
  })

  const describers = layers.filter((fn) => typeof fn.describeTool === 'function')
  if (describers.length > 0) {
    composed.describeTool = (tool: AnyTool, run: RunContext, now: number, log?: Logger) => {
      const notes: string[] = []
      // A describer that throws costs the tool its own note, not the others' ("unavailable") nor the run.
      let failure: unknown
      for (const layer of describers) {
        try {
          const note = layer.describeTool?.(tool, run, now, log)
          if (note) notes.push(note)
        } catch (err) {
          if (log === undefined) failure ??= err
          else log.error({ err, runId: run.id, tool: tool.name }, `${nameOf(layer)} failed while describing tool "${tool.name}"`)
        }
      }
      if (failure !== undefined) throw failure
      return notes.length > 0 ? notes.join(' ') : undefined
    }
  }
  const observers = layers.filter((fn) => typeof fn.observeTurn === 'function')
  if (observers.length > 0) {
    composed.observeTurn = (turn, run, env) => {
      // Every layer sees every turn: one that throws by mistake must not blind the convergence check behind it.
      let stop: unknown
      for (const layer of observers) {
        try {
          layer.observeTurn?.(turn, run, env)
        } catch (err) {
          if (LoopError.is(err)) stop ??= err
          else env.log.error({ err, runId: run.id, turn: turn.turn }, `${nameOf(layer)} failed while observing a turn; the run goes on`)
        }
      }
      if (stop !== undefined) throw stop
    }
  }
  const secrets = layers.flatMap((fn) => fn.secrets ?? [])
  if (secrets.length > 0) composed.secrets = secrets
  return composed
}
