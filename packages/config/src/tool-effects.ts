import type { AnyTool, Middleware } from '@shallot/core'
import { overrideTools } from '@shallot/core'

/**
 * The entry of a stack's middleware list for a config that overrides some tools' `effect`: every
 * layer sees `ctx.tool` with the effect the config gives (core's `overrideTools`, which the stack
 * applies before the first layer runs and swaps with the layers). `tools` maps a tool name to its
 * definition with that effect, built once when the config is applied.
 *
 * @example
 * toolEffects(new Map([['charge_card', defineTool({ ...chargeCard, effect: 'idempotent' })]]))
 */
export function toolEffects(tools: ReadonlyMap<string, AnyTool>): Middleware {
  return overrideTools(tools)
}
