import type { AnyTool, Middleware, Next, ToolContext } from '@shallot/core'

/**
 * The outermost layer of a stack whose config overrides some tools' `effect`: every layer inside
 * sees `ctx.tool` with the effect the config gives. `tools` maps a tool name to its definition with
 * that effect, built once when the config is applied.
 *
 * @example
 * toolEffects(new Map([['charge_card', defineTool({ ...chargeCard, effect: 'idempotent' })]]))
 */
export function toolEffects(tools: ReadonlyMap<string, AnyTool>): Middleware {
  return function toolEffects(ctx: ToolContext, next: Next): Promise<void> {
    const tool = tools.get(ctx.call.name)
    // ctx.tool is read-only for layers; this layer exists to change it before any of them runs.
    if (tool !== undefined) (ctx as { tool: AnyTool | undefined }).tool = tool
    return next()
  }
}
