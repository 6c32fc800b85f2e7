import type { AnyTool, Middleware, Next, RunContext, ToolContext } from '@shallot/core'

/**
 * One layer that is a different instance for some tools: `byTool` maps a tool name to its own
 * instance, or to `undefined` to skip the layer for that tool; every other tool gets `base`.
 * The instances are built once, when the config is applied; a call only looks one up by name.
 *
 * @example
 * perTool(retry(), new Map([['charge_card', undefined], ['search', retry({ maxAttempts: 5 })]]))
 */
export function perTool(base: Middleware, byTool: ReadonlyMap<string, Middleware | undefined>): Middleware {
  const layer: Middleware = function perTool(ctx: ToolContext, next: Next): Promise<void> {
    const name = ctx.call.name
    const chosen = byTool.has(name) ? byTool.get(name) : base
    return chosen === undefined ? next() : chosen(ctx, next)
  }
  // Usage errors and stack traces name the wrapped middleware, not the wrapper.
  Object.defineProperty(layer, 'name', { value: base.name || 'perTool' })
  if (base.describeTool !== undefined || [...byTool.values()].some((m) => m?.describeTool !== undefined)) {
    layer.describeTool = (tool: AnyTool, run: RunContext, now: number) => {
      const chosen = byTool.has(tool.name) ? byTool.get(tool.name) : base
      return chosen?.describeTool?.(tool, run, now)
    }
  }
  // Secrets any variant was given are secrets for every tool: the stack redacts them all.
  const secrets = [base, ...byTool.values()].flatMap((m) => m?.secrets ?? [])
  if (secrets.length > 0) layer.secrets = secrets
  return layer
}
