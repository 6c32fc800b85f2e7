import { MiddlewareUsageError } from './compose.js'
import { defineTool } from './define-tool.js'
import type { AnyTool, Middleware, ToolContext } from './types.js'

const OVERRIDES = Symbol.for('shallot.toolOverrides')

type OverridesLayer = Middleware & { readonly [OVERRIDES]: ReadonlyMap<string, AnyTool> }

/**
 * Serves some of a stack's tools under another definition of the same name (another `effect`, say)
 * while these layers are the stack's: put it in the list given to `createStack({ middleware })` or
 * `stack.setMiddleware()`, and every layer and the terminal see `ctx.tool` as given here, from the
 * first layer on. It swaps with the layers, so a config that changes a tool's effect and its policies
 * changes both at once. Only the stack reads it: nested in `compose()` it refuses to run.
 *
 * @example
 * stack.setMiddleware([overrideTools([defineTool({ ...chargeCard, effect: 'idempotent' })]), ...defaultMiddleware()])
 */
export function overrideTools(tools: ReadonlyMap<string, AnyTool> | readonly AnyTool[]): Middleware {
  const byName = new Map<string, AnyTool>()
  for (const raw of tools instanceof Map ? tools.values() : (tools as readonly AnyTool[])) {
    const tool = defineTool(raw as AnyTool) as AnyTool
    byName.set(tool.name, tool)
  }
  const layer = async function overrideTools(_ctx: ToolContext): Promise<void> {
    throw new MiddlewareUsageError(
      'overrideTools() ran as a layer: give it to createStack({ middleware }) or stack.setMiddleware() in the top-level list, not inside compose()',
    )
  }
  return Object.assign(layer, { [OVERRIDES]: byName }) as OverridesLayer
}

/** Splits a stack's middleware list into the layers and the tool definitions they override. */
export function splitOverrides(
  middleware: readonly Middleware[],
  tools: ReadonlyMap<string, AnyTool>,
): { readonly layers: readonly Middleware[]; readonly overrides: ReadonlyMap<string, AnyTool> | undefined } {
  if (!middleware.some((layer) => OVERRIDES in layer)) return { layers: middleware, overrides: undefined }
  const overrides = new Map<string, AnyTool>()
  const layers: Middleware[] = []
  for (const layer of middleware) {
    const own = (layer as Partial<OverridesLayer>)[OVERRIDES]
    if (own === undefined) {
      layers.push(layer)
      continue
    }
    for (const [name, tool] of own) {
      if (!tools.has(name)) {
        throw new MiddlewareUsageError(
          `overrideTools(): the stack has no tool named "${name}" to override; it has ${[...tools.keys()].join(', ') || 'none'}`,
        )
      }
      overrides.set(name, tool)
    }
  }
  return { layers, overrides }
}
