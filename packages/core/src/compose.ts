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
 * It is handed the call's context (a `Next` that takes no argument ignores it): the stack's terminal
 * reads the call from it.
 */
function callLast(last: Next | undefined, ctx: ToolContext): Promise<void> {
  if (last === undefined) return Promise.resolve()
  try {
    return Promise.resolve((last as (ctx: ToolContext) => Promise<void> | void)(ctx))
  } catch (err) {
    return Promise.reject(err)
  }
}

/** One layer's call: whether its next() is running, and that inner call's promise. */
interface LayerCall {
  pending: boolean
  inner: Promise<void> | undefined
}

/**
 * A layer's call ended in `err`: its caller's next() has settled, and the inner call it gave up on (if any) must
 * not surface later as an unhandled rejection. Returns `err`, for the caller to throw.
 */
function ended(caller: LayerCall | undefined, call: LayerCall, err: unknown): unknown {
  if (caller !== undefined) caller.pending = false
  if (call.pending) call.inner?.catch(noop)
  return err
}

/** What {@link compose} returns: a tool `Middleware` for tool layers, a function of the same context for any other. */
export type Composed<Ctx> = [Ctx] extends [ToolContext] ? Middleware : (ctx: Ctx, next: Next) => Promise<void>

/**
 * Composes middlewares into one, Koa style: the first is outermost, errors propagate outward,
 * and the result is itself a middleware, so stacks nest.
 *
 * Unlike koa-compose, a layer may call `next()` again once the previous call settled (that is how
 * retry re-runs the inner layers). Calling `next()` while an earlier call is pending, or resolving
 * while a `next()` is still pending, is a {@link MiddlewareUsageError}, whoever wrote the layer.
 *
 * The rules do not depend on what the context is: the same compose serves tool middleware and model
 * middleware (`ModelMiddleware`), and a host composes each list of its own.
 *
 * @example
 * const stack = compose([panicCatcher().wrapToolCall, retry().wrapToolCall, timeout({ ms: 5000 }).wrapToolCall])
 * await stack(ctx, terminal)
 */
export function compose<Ctx = ToolContext>(middleware: readonly ((ctx: Ctx, next: Next) => Promise<void>)[]): Composed<Ctx> {
  if (!Array.isArray(middleware)) {
    throw new TypeError(`compose() takes an array of middleware functions, got ${describeValue(middleware)}`)
  }
  middleware.forEach((fn, i) => {
    if (typeof fn !== 'function') {
      throw new TypeError(`compose(): middleware[${i}] must be a function (ctx, next) => Promise<void>, got ${describeValue(fn)}`)
    }
  })
  const layers = [...middleware] as unknown as Middleware[]
  const count = layers.length

  // Every layer, built-in or not, runs under this guard. `caller` is the call of the layer whose next() this is:
  // the reaction that settles this call also marks the caller's next() settled.
  function run(ctx: ToolContext, last: Next | undefined, i: number, caller: LayerCall | undefined): Promise<void> {
    if (i >= count) {
      const end = callLast(last, ctx)
      if (caller === undefined) return end
      return end.then(
        () => {
          caller.pending = false
        },
        (err: unknown) => {
          caller.pending = false
          throw err
        },
      )
    }
    const fn = layers[i] as Middleware
    const call: LayerCall = { pending: false, inner: undefined }
    const next: Next = () => {
      if (call.pending) {
        return Promise.reject(
          new MiddlewareUsageError(
            `${nameOf(fn)} called next() while its previous next() was still pending; await next() before calling it again`,
          ),
        )
      }
      call.pending = true
      call.inner = run(ctx, last, i + 1, call)
      return call.inner
    }
    let out: Promise<void>
    try {
      out = Promise.resolve(fn(ctx, next))
    } catch (err) {
      return Promise.reject(ended(caller, call, err))
    }
    return out.then(
      () => {
        if (call.pending) {
          throw ended(
            caller,
            call,
            new MiddlewareUsageError(`${nameOf(fn)} returned before its next() settled; await next() (or return its promise)`),
          )
        }
        if (caller !== undefined) caller.pending = false
      },
      (err: unknown) => {
        throw ended(caller, call, err)
      },
    )
  }

  const composed: Middleware = function composed(ctx: ToolContext, last?: Next): Promise<void> {
    return run(ctx, last, 0, undefined)
  }

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
  return composed as Composed<Ctx>
}
