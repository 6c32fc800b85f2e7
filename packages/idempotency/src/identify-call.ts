import type { AnyTool, ToolContext } from '@shallot/core'
import { scopeProblem } from '@shallot/core/kit'
import { type Guarded, type Layer, refuse } from './guarded-call.js'
import { derivedKey, keyProblem, storeKeyOf } from './idempotency-key.js'
import { invalidKey, invalidScope } from './refusals.js'

function scopeOf(layer: Layer, ctx: ToolContext, tool: string): string {
  const given = layer.opts.scope
  if (typeof given === 'string') return given
  const scope = given(ctx)
  const problem = scopeProblem(scope)
  if (problem !== undefined) throw refuse(ctx, undefined, invalidScope(tool, problem))
  return scope
}

/** What a call's key is made from: its tool, scope, parsed arguments and their hash. */
interface KeySource {
  readonly tool: string
  readonly scope: string
  readonly args: unknown
  readonly argsHash: string
}

function keyOf(layer: Layer, ctx: ToolContext, { tool, scope, args, argsHash }: KeySource): string {
  const { opts } = layer
  let key: unknown
  let source: string
  if (opts.key !== undefined) {
    key = opts.key(ctx, args)
    source = 'the key function'
  } else if (opts.keyFrom !== undefined) {
    key = typeof args === 'object' && args !== null ? (args as Record<string, unknown>)[opts.keyFrom] : undefined
    source = `argument "${opts.keyFrom}"`
    if (key === undefined) throw refuse(ctx, undefined, invalidKey(tool, 'is missing', source))
    if (typeof key === 'number' && Number.isFinite(key)) key = String(key)
  } else {
    return derivedKey(scope, ctx.run.id, tool, argsHash)
  }
  const problem = keyProblem(key)
  if (problem !== undefined) throw refuse(ctx, undefined, invalidKey(tool, problem, source))
  return key as string
}

/**
 * The call as this layer guards it (setting `ctx.idempotencyKey`), or `undefined` when the schema
 * refused its arguments: the dispatcher answers invalid_arguments and nothing runs, so no record is
 * needed. A bad scope or key throws its refusal.
 */
export function identify(layer: Layer, ctx: ToolContext, tool: AnyTool): Guarded | undefined {
  let args: unknown
  try {
    // The call's one parse, shared with the tool (defaults filled in, so `{ amount: 5 }` and
    // `{ amount: 5, currency: 'usd' }` are one call when `usd` is the default).
    args = ctx.args
  } catch {
    return undefined
  }
  const scope = scopeOf(layer, ctx, tool.name)
  // The call's one identity (tool + canonical parsed arguments), the one stuck-loop counts by too.
  const argsHash = ctx.fingerprint
  const key = keyOf(layer, ctx, { tool: tool.name, scope, args, argsHash })
  ctx.idempotencyKey = key
  const reconcilable = tool.reconcile !== undefined
  return { tool: tool.name, effect: tool.effect, key, storeKey: storeKeyOf(layer.scopeInStore(ctx, scope), key), argsHash, reconcilable }
}
