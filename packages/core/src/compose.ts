import type { AnyTool, Middleware, Next, RunContext, ToolContext } from './types.js'

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
 * Composes middlewares into one, Koa style: the first is outermost, errors propagate outward,
 * and the result is itself a middleware, so stacks nest.
 *
 * Unlike koa-compose, a layer may call `next()` again once the previous call settled (that is how
 * retry re-runs the inner layers). Calling `next()` while an earlier call is pending, or resolving
 * while a `next()` is still pending, is a {@link MiddlewareUsageError}.
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
  const count = layers.length

  const composed: Middleware = function composed(ctx: ToolContext, last?: Next): Promise<void> {
    return run(0)

    function run(i: number): Promise<void> {
      const fn = i < count ? layers[i] : last
      if (fn === undefined) return Promise.resolve()
      if (i >= count) {
        try {
          return Promise.resolve((fn as Next)())
        } catch (err) {
          return Promise.reject(err)
        }
      }
      let pending: Promise<void> | undefined
      const next: Next = () => {
        if (pending !== undefined) {
          return Promise.reject(
            new MiddlewareUsageError(
              `${nameOf(fn)} called next() while its previous next() was still pending; await next() before calling it again`,
            ),
          )
        }
        const inner = run(i + 1).then(
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
        out = Promise.resolve((fn as Middleware)(ctx, next))
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
  }

  const describers = layers.filter((fn) => typeof fn.describeTool === 'function')
  if (describers.length > 0) {
    composed.describeTool = (tool: AnyTool, run: RunContext, now: number) => {
      const notes: string[] = []
      for (const layer of describers) {
        const note = layer.describeTool?.(tool, run, now)
        if (note) notes.push(note)
      }
      return notes.length > 0 ? notes.join(' ') : undefined
    }
  }
  const secrets = layers.flatMap((fn) => fn.secrets ?? [])
  if (secrets.length > 0) composed.secrets = secrets
  return composed
}
