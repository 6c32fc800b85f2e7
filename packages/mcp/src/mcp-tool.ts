import { type AnyTool, abortReason, defineTool, type ToolEffect, ToolError, toolDescription } from '@shallot/core'
import { callTool, isSdkV2 } from './call-tool.js'
import { effectOf } from './effect-of.js'
import { inputSchemaFromJson } from './input-schema-from-json.js'
import { McpConnection } from './mcp-connection.js'
import { mcpResultError, resultText } from './mcp-result-error.js'
import { mcpTransportError } from './mcp-transport-error.js'
import type { McpCallSite, McpClient, McpRequestOptions, McpToolDescription } from './types.js'

/** One progress notification of a running MCP tool. */
export interface McpProgress {
  readonly tool: string
  readonly progress: number
  readonly total?: number | undefined
  readonly message?: string | undefined
}

export interface McpToolOptions {
  /** The shallot name. Default: the MCP name, with characters shallot does not allow replaced by `_`. */
  name?: string
  /** The server's name in messages and `details`. Default `mcp`. */
  server?: string
  /** Overrides the effect read from the tool's annotations. */
  effect?: ToolEffect
  /** `text` (default): the result's text parts, joined. `result`: the whole `CallToolResult`, structured content included. */
  output?: 'text' | 'result'
  /**
   * The request's deadline, in ms, restarted by every progress notification: a tool that keeps
   * reporting progress is not cut off. Default: the SDK's (60 s).
   */
  requestTimeoutMs?: number
  /** The hard cap on one call, progress or not, in ms. Default: none (only `requestTimeoutMs`). */
  maxTotalMs?: number
  /** Called with every progress notification (for a UI or a log). A listener that throws is ignored. */
  onProgress?: (progress: McpProgress) => void
  /** The connection shared by the tools of one server (made by `mcpTools`); it reconnects after a transport failure. */
  connection?: McpConnection
}

/** A shallot-safe tool name for an MCP name: letters, digits, `_`, `-`, `.`, starting with a letter, at most 64. */
export function shallotToolName(mcpName: string, prefix = ''): string {
  const clean = `${prefix}${mcpName}`.replace(/[^A-Za-z0-9_.-]/g, '_')
  return (/^[A-Za-z]/.test(clean) ? clean : `t_${clean}`).slice(0, 64)
}

function requestOptions(options: McpToolOptions, site: McpCallSite, signal: AbortSignal): McpRequestOptions {
  const { onProgress } = options
  return {
    signal,
    ...(options.requestTimeoutMs === undefined ? {} : { timeout: options.requestTimeoutMs }),
    ...(options.maxTotalMs === undefined ? {} : { maxTotalTimeout: options.maxTotalMs }),
    // Asking for progress is what makes the server send it; every notification restarts the request's deadline.
    resetTimeoutOnProgress: true,
    onprogress(progress) {
      if (onProgress === undefined) return
      try {
        onProgress({ tool: site.tool, progress: progress.progress, total: progress.total, message: progress.message })
      } catch {
        // A listener's failure must not fail the call nor reach the SDK's notification handler.
      }
    },
  }
}

/**
 * One MCP tool as a shallot tool: validated by its JSON Schema, its effect from its annotations, and an
 * `execute` that calls `client.callTool` with the call's signal (so an abort sends
 * `notifications/cancelled`), a deadline that progress restarts, and a hard cap. Works with SDK 1.x
 * and 2.x clients. A result with `isError: true` throws the soft error {@link mcpResultError}
 * classifies; a transport failure throws {@link mcpTransportError}'s and marks the connection stale,
 * so the next call reconnects first (when `mcpTools` was given a `transport` factory); a call whose
 * signal aborted throws the abort reason (cancellation stays cancellation).
 *
 * @example
 * const { tools } = await client.listTools()
 * const readFile = mcpTool(client, tools.find((t) => t.name === 'read_text_file')!, { server: 'filesystem' })
 */
export function mcpTool(client: McpClient, description: McpToolDescription, options: McpToolOptions = {}): AnyTool {
  const site = { server: options.server ?? 'mcp', tool: description.name }
  const connection = options.connection ?? new McpConnection(client, undefined)
  const whole = options.output === 'result'
  return defineTool({
    name: options.name ?? shallotToolName(description.name),
    // The server's words: cleaned and capped here too, so no reader of the tool (a log, a CLI) sees them raw.
    description: toolDescription(description.description ?? description.title ?? description.annotations?.title ?? ''),
    input: inputSchemaFromJson(description.inputSchema),
    effect: options.effect ?? effectOf(description.annotations),
    async execute(args, { signal }) {
      try {
        await connection.ready()
      } catch (error) {
        if (signal.aborted) throw abortReason(signal)
        throw new ToolError('network_error', `MCP server "${site.server}" could not be reached again`, {
          category: 'transient',
          safeToRepeat: true, // nothing was sent
          hint: 'the MCP server is unreachable; try again later or do without this tool',
          cause: error,
          details: { ...site, source: 'mcp_transport' },
        })
      }
      let result: Awaited<ReturnType<typeof callTool>>
      try {
        const params = { name: description.name, arguments: args as Record<string, unknown> }
        result = await callTool(connection.client, params, requestOptions(options, site, signal), isSdkV2(connection.client))
      } catch (error) {
        if (signal.aborted) throw abortReason(signal)
        const classified = mcpTransportError(error, site)
        if (classified?.code === 'network_error') connection.markStale()
        throw classified ?? error
      }
      if (result.isError === true) throw mcpResultError(result, site)
      return whole ? result : resultText(result)
    },
  }) as AnyTool
}
