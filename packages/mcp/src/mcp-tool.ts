import { type AnyTool, abortReason, defineTool, type ToolEffect } from '@shallot/core'
import { effectOf } from './effect-of.js'
import { inputSchemaFromJson } from './input-schema-from-json.js'
import { mcpResultError, resultText } from './mcp-result-error.js'
import { mcpTransportError } from './mcp-transport-error.js'
import type { McpCallResult, McpClient, McpToolDescription } from './types.js'

export interface McpToolOptions {
  /** The shallot name. Default: the MCP name, with characters shallot does not allow replaced by `_`. */
  name?: string
  /** The server's name in messages and `details`. Default `mcp`. */
  server?: string
  /** Overrides the effect read from the tool's annotations. */
  effect?: ToolEffect
  /** `text` (default): the result's text parts, joined. `result`: the whole `CallToolResult`, structured content included. */
  output?: 'text' | 'result'
  /** Deadline the SDK itself puts on the request. Default: the SDK's (60 s). Prefer shallot's `timeout()` layer. */
  requestTimeoutMs?: number
}

/** A shallot-safe tool name for an MCP name: letters, digits, `_`, `-`, `.`, starting with a letter, at most 64. */
export function shallotToolName(mcpName: string, prefix = ''): string {
  const clean = `${prefix}${mcpName}`.replace(/[^A-Za-z0-9_.-]/g, '_')
  return (/^[A-Za-z]/.test(clean) ? clean : `t_${clean}`).slice(0, 64)
}

/**
 * One MCP tool as a shallot tool: validated by its JSON Schema, its effect from its annotations, and an
 * `execute` that calls `client.callTool` with the call's signal. A result with `isError: true` throws
 * the soft error {@link mcpResultError} classifies; a transport failure throws {@link mcpTransportError}'s;
 * a call whose signal aborted throws the abort reason (cancellation stays cancellation).
 *
 * @example
 * const { tools } = await client.listTools()
 * const readFile = mcpTool(client, tools.find((t) => t.name === 'read_text_file')!, { server: 'filesystem' })
 */
export function mcpTool(client: McpClient, description: McpToolDescription, options: McpToolOptions = {}): AnyTool {
  const site = { server: options.server ?? 'mcp', tool: description.name }
  const requestOptions = options.requestTimeoutMs === undefined ? {} : { timeout: options.requestTimeoutMs }
  const whole = options.output === 'result'
  return defineTool({
    name: options.name ?? shallotToolName(description.name),
    description: description.description ?? description.title ?? description.annotations?.title ?? '',
    input: inputSchemaFromJson(description.inputSchema),
    effect: options.effect ?? effectOf(description.annotations),
    async execute(args, { signal }) {
      let result: McpCallResult
      try {
        result = await client.callTool({ name: description.name, arguments: args as Record<string, unknown> }, undefined, {
          ...requestOptions,
          signal,
        })
      } catch (error) {
        if (signal.aborted) throw abortReason(signal)
        throw mcpTransportError(error, site) ?? error
      }
      if (result.isError === true) throw mcpResultError(result, site)
      return whole ? result : resultText(result)
    },
  }) as AnyTool
}
