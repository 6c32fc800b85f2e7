import { z } from 'zod'

const SCOPE = /^[\x21-\x7e]{1,128}$/
const RULE = 'must be 1-128 printable ASCII characters without spaces'

/**
 * A scope as an option holds it: the part of a key (a tenant, an environment) that keeps one scope's
 * calls and records apart from another's. 1 to 128 printable ASCII characters without spaces, so a
 * scope and a key joined by a space are always told apart, and one tenant id fits every layer.
 *
 * @example
 * z.strictObject({ scope: scopeSchema.default('default') })
 */
export const scopeSchema = z.string().regex(SCOPE, RULE)

/**
 * Why `value` cannot be a scope, or `undefined` when it can (the rule of {@link scopeSchema}); a
 * string is quoted, cut to 40 characters, anything else named by its type.
 *
 * @example
 * scopeProblem('tenant:42') // undefined
 * scopeProblem('has space') // 'must be 1-128 printable ASCII characters without spaces, got "has space"'
 */
export function scopeProblem(value: unknown): string | undefined {
  if (typeof value === 'string' && SCOPE.test(value)) return undefined
  const got = typeof value === 'string' ? JSON.stringify(value.slice(0, 40)) : typeof value
  return `${RULE}, got ${got}`
}

function thrownText(err: unknown): string {
  try {
    return `threw: ${err instanceof Error ? String(err.message).slice(0, 200) : typeof err}`
  } catch {
    return 'threw a value that cannot be read'
  }
}

/**
 * Asks a user's scope function for the scope of `arg` (a call's context): the scope, or the problem
 * that it threw or answered no scope, for a layer that runs such a call unshared rather than fail it.
 *
 * @example
 * const asked = scopeFrom(options.scope, ctx)
 * if ('problem' in asked) ctx.emit('quota.scope_failed', { problem: asked.problem })
 */
export function scopeFrom<A>(scope: (arg: A) => unknown, arg: A): { readonly scope: string } | { readonly problem: string } {
  let value: unknown
  try {
    value = scope(arg)
  } catch (err) {
    return { problem: thrownText(err) }
  }
  const problem = scopeProblem(value)
  return problem === undefined ? { scope: value as string } : { problem }
}
