/**
 * "Used fully", for a framework with shallot in front, as `shallot-full` uses shallot's own agent
 * (contenders/shallot-agent.ts): each write forwards its call's idempotency key upstream and is
 * declared `idempotent`, with a `reconcile` that asks the service's lookup endpoint; a tool with a
 * mirror is answered from it by `fallback()`, placed inside retry; the model calls go through the
 * default model stack (`defaultModelMiddleware()`), which each framework row adds its own way.
 */
import { type AnyTool, createStack, defaultMiddleware, fallback, type Middleware, type Stack } from 'shallot'
import { type BenchTool, MIRRORS } from '../tasks.js'

/** A write that forwards its key upstream is `idempotent`: a repeat under the same key lands once. */
export const fullEffect = (tool: BenchTool) => (tool.effect === 'write' ? 'idempotent' : tool.effect)

/** `defaultMiddleware()` with `fallback()` answering each mirrored tool from its mirror, inside retry, over `tools`. */
export function fullStack(tools: readonly AnyTool[]): Stack {
  const layers = [...defaultMiddleware()] as Middleware[]
  const names = new Set(tools.map((tool) => tool.name))
  const sources = Object.fromEntries(
    Object.entries(MIRRORS)
      .filter(([primary, mirror]) => names.has(primary) && names.has(mirror))
      .map(([primary, mirror]) => [primary, [{ from: 'tool' as const, tool: mirror }]]),
  )
  let built: Stack | undefined
  const answerFromMirror = fallback({ tools: sources, dispatch: (call, options) => (built as Stack).dispatch(call, options) })
  // panic-catcher, stuck-loop, idempotency, circuit-breaker, retry | fallback | error-classifier, timeout
  layers.splice(5, 0, answerFromMirror.wrapToolCall)
  built = createStack({ tools: [...tools], middleware: layers })
  return built
}
