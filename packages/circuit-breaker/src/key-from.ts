/**
 * The breaker a call belongs to, by the user's `key`: its string, `undefined` (no breaker), or a
 * TypeError that names the option when it throws or answers anything else.
 *
 * @example
 * keyFrom((ctx) => ctx.run.id, ctx) // 'run-1'
 */
export function keyFrom<Ctx>(key: (ctx: Ctx) => unknown, ctx: Ctx): string | undefined {
  let value: unknown
  try {
    value = key(ctx)
  } catch (err) {
    throw new TypeError(`circuitBreaker(): option key threw: ${err instanceof Error ? err.message : String(err)}`, { cause: err })
  }
  if (value === undefined || typeof value === 'string') return value
  throw new TypeError(`circuitBreaker(): option key must return a string or undefined, got ${value === null ? 'null' : typeof value}`)
}
