import type { AnyTool, ModelContext, ToolContext } from '@shallot/core'

/**
 * A circuit-breaker key that puts every tool of one MCP server behind one breaker: when the server
 * disconnects, its failures open one circuit and every tool of that server is refused at once.
 * Tools of no listed server keep a breaker of their own (their name). A model call is no server's: the
 * key answers `undefined` for it, so a breaker (or rate limit) keyed by it lets model calls through.
 *
 * @example
 * const fs = await mcpTools(fsClient, { prefix: 'fs_' })
 * circuitBreaker({ key: serverKey({ filesystem: fs }), policy: consecutive({ threshold: 2 }) })
 */
export function serverKey(servers: Readonly<Record<string, readonly AnyTool[]>>): (ctx: ToolContext | ModelContext) => string | undefined {
  const byTool = new Map<string, string>()
  for (const [server, tools] of Object.entries(servers)) {
    for (const tool of tools) byTool.set(tool.name, `mcp:${server}`)
  }
  return function mcpServerKey(ctx) {
    if (!('call' in ctx)) return undefined
    return byTool.get(ctx.call.name) ?? ctx.call.name
  }
}
