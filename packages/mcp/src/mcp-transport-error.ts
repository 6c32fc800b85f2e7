import { ToolError } from '@shallot/core'
import type { McpCallSite } from './types.js'

// JSON-RPC and MCP error codes, as the SDK's ErrorCode enum has them.
const CONNECTION_CLOSED = -32000
const REQUEST_TIMEOUT = -32001
const PARSE_ERROR = -32700
const INVALID_REQUEST = -32600
const METHOD_NOT_FOUND = -32601
const INVALID_PARAMS = -32602
const INTERNAL_ERROR = -32603

const UNREACHABLE_HINT = 'the MCP server is unreachable; try again later or do without this tool'

function mcpCode(error: unknown): number | undefined {
  if (!(error instanceof Error) || error.name !== 'McpError') return undefined
  const code = (error as { code?: unknown }).code
  return typeof code === 'number' ? code : undefined
}

/**
 * Classifies what `client.callTool` threw (the call did not produce a result):
 * - connection closed (`-32000`) → `network_error`, transient, not safe to repeat (the server may have run it);
 * - `Not connected` (the transport is gone; nothing was sent) → `network_error`, transient, safe to repeat;
 * - request timeout (`-32001`) → `timeout`; internal error (`-32603`) and server-defined codes → `upstream_error`;
 * - invalid params (`-32602`) → `invalid_arguments`, unless it is the SDK's own check of the server's
 *   structured output (then `upstream_error`: the server broke its schema);
 * - parse error, invalid request, method not found → `protocol_error`, fatal (nothing the model can fix).
 * Returns `undefined` for anything else, which the stack's classifier or panic catcher handles.
 *
 * @example
 * mcpTransportError(new Error('Not connected'), { server: 'fs', tool: 'read_file' })?.code // 'network_error'
 */
export function mcpTransportError(error: unknown, site: McpCallSite): ToolError | undefined {
  const details = { server: site.server, tool: site.tool, source: 'mcp_transport' }
  const server = `MCP server "${site.server}"`
  if (error instanceof Error && error.message === 'Not connected') {
    return new ToolError('network_error', `${server} is not connected`, {
      category: 'transient',
      safeToRepeat: true,
      hint: UNREACHABLE_HINT,
      cause: error,
      details,
    })
  }
  const code = mcpCode(error)
  if (code === undefined) return undefined
  const message = (error as Error).message
  switch (code) {
    case CONNECTION_CLOSED:
      return new ToolError('network_error', `${server} closed the connection during ${site.tool}`, {
        category: 'transient',
        hint: UNREACHABLE_HINT,
        cause: error,
        details,
      })
    case REQUEST_TIMEOUT:
      return new ToolError('timeout', `${server} did not answer ${site.tool} in time`, { category: 'transient', cause: error, details })
    case INVALID_PARAMS:
      if (/structured content/i.test(message)) {
        return new ToolError('upstream_error', `${server} answered ${site.tool} with output that breaks its own schema`, {
          category: 'recoverable',
          retryable: false,
          cause: error,
          details,
        })
      }
      return new ToolError('invalid_arguments', message, { category: 'recoverable', cause: error, details })
    case PARSE_ERROR:
    case INVALID_REQUEST:
    case METHOD_NOT_FOUND:
      return new ToolError('protocol_error', `${server} refused ${site.tool}: ${message}`, { category: 'fatal', cause: error, details })
    case INTERNAL_ERROR:
      return new ToolError('upstream_error', `${server} failed on ${site.tool}: ${message}`, {
        category: 'transient',
        cause: error,
        details,
      })
    default:
      return new ToolError('upstream_error', `${server} failed on ${site.tool}: ${message}`, {
        category: 'transient',
        cause: error,
        details,
      })
  }
}
