import type { ToolContext } from '@shallot/core'

/**
 * The call's arguments as the tool's schema parsed them (`ctx.args`: defaults filled in, so
 * `{ amount: 5 }` and `{ amount: 5, currency: 'usd' }` are one call when `usd` is the default),
 * or `undefined` when the schema refuses them: the dispatcher will answer `invalid_arguments` and
 * nothing runs, so no record is needed. The parse is the call's one parse, shared with the tool.
 *
 * @example
 * const parsed = parsedArgs(ctx)
 * if (parsed === undefined) return next()
 */
export function parsedArgs(ctx: ToolContext): { readonly args: unknown } | undefined {
  try {
    return { args: ctx.args }
  } catch {
    return undefined
  }
}
