import { isConnectionFailure, requestFate, ToolError } from '@shallot/core'
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

// JSON-RPC errors: `McpError` in SDK 1.x, `ProtocolError` in 2.x (duck-typed: two SDK copies may be installed).
function mcpCode(error: unknown): number | undefined {
  if (!(error instanceof Error) || (error.name !== 'McpError' && error.name !== 'ProtocolError')) return undefined
  const code = (error as { code?: unknown }).code
  return typeof code === 'number' ? code : undefined
}

// SDK 2.x's local failures: `SdkError` with a string code (`SdkHttpError` carries an HTTP status too).
function sdkCode(error: unknown): string | undefined {
  if (!(error instanceof Error) || !/^Sdk(Http)?Error$/.test(error.name)) return undefined
  const code = (error as { code?: unknown }).code
  return typeof code === 'string' ? code : undefined
}

/** The errno of a failed fetch or socket (`TypeError: fetch failed` keeps it in its cause). */
function errnoOf(error: unknown): string | undefined {
  for (let current = error, depth = 0; typeof current === 'object' && current !== null && depth < 4; depth++) {
    const code = (current as { code?: unknown }).code
    if (typeof code === 'string' && isConnectionFailure(code)) return code
    current = (current as { cause?: unknown }).cause
  }
  return undefined
}

/** The HTTP status of a Streamable HTTP failure: 1.x `StreamableHTTPError.code`, 2.x `SdkHttpError.data.status`. */
function httpStatusOf(error: unknown): number | undefined {
  if (!(error instanceof Error)) return undefined
  const data = (error as { data?: { status?: unknown } }).data
  if (typeof data?.status === 'number') return data.status
  const code = (error as { code?: unknown }).code
  return typeof code === 'number' && error.message.startsWith('Streamable HTTP error:') ? code : undefined
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
  const notConnected = () =>
    new ToolError('network_error', `${server} is not connected`, {
      category: 'transient',
      safeToRepeat: true,
      hint: UNREACHABLE_HINT,
      cause: error,
      details,
    })
  if (error instanceof Error && error.message === 'Not connected') return notConnected()
  const sdk = sdkCode(error)
  if (sdk !== undefined) return sdkError(sdk, error as Error, site, details)
  const errno = errnoOf(error)
  if (errno !== undefined) {
    // Refused: the request never left. Dropped: it may have been read and run.
    return new ToolError('network_error', `${server} is unreachable (${errno}) during ${site.tool}`, {
      category: 'transient',
      safeToRepeat: requestFate({ codes: [errno] }) === 'not_processed',
      hint: UNREACHABLE_HINT,
      cause: error,
      details,
    })
  }
  const status = httpStatusOf(error)
  if (status !== undefined) return httpError(status, error as Error, site, details)
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

type Details = { server: string; tool: string; source: string }

function sdkError(code: string, error: Error, site: McpCallSite, details: Details): ToolError | undefined {
  const server = `MCP server "${site.server}"`
  switch (code) {
    case 'NOT_CONNECTED':
    case 'SEND_FAILED':
      return new ToolError('network_error', `${server} is not connected`, {
        category: 'transient',
        safeToRepeat: true,
        hint: UNREACHABLE_HINT,
        cause: error,
        details,
      })
    case 'CONNECTION_CLOSED':
      return new ToolError('network_error', `${server} closed the connection during ${site.tool}`, {
        category: 'transient',
        hint: UNREACHABLE_HINT,
        cause: error,
        details,
      })
    case 'REQUEST_TIMEOUT':
      return new ToolError('timeout', `${server} did not answer ${site.tool} in time`, { category: 'transient', cause: error, details })
    case 'INVALID_RESULT':
      return new ToolError('upstream_error', `${server} answered ${site.tool} with output that breaks its own schema`, {
        category: 'recoverable',
        retryable: false,
        cause: error,
        details,
      })
    default: {
      const status = httpStatusOf(error)
      if (status !== undefined) return httpError(status, error, site, details)
      if (code.startsWith('CLIENT_HTTP')) {
        return new ToolError('network_error', `${server} failed on ${site.tool}: ${error.message}`, {
          category: 'transient',
          cause: error,
          details,
        })
      }
      return new ToolError('protocol_error', `${server} refused ${site.tool}: ${error.message}`, {
        category: 'fatal',
        cause: error,
        details,
      })
    }
  }
}

function httpError(status: number, error: Error, site: McpCallSite, details: Details): ToolError {
  const server = `MCP server "${site.server}"`
  if (status === 401 || status === 403) {
    return new ToolError('permission_denied', `${server} refused the credentials (HTTP ${status})`, {
      category: 'user',
      cause: error,
      details,
    })
  }
  // 404 or 400 on a session the server no longer knows (it restarted): a new session is needed; nothing ran.
  if (status === 404 || status === 400) {
    return new ToolError('network_error', `${server} lost the session (HTTP ${status})`, {
      category: 'transient',
      safeToRepeat: true,
      hint: UNREACHABLE_HINT,
      cause: error,
      details,
    })
  }
  return new ToolError('upstream_error', `${server} failed on ${site.tool} (HTTP ${status})`, {
    category: 'transient',
    // What the status means for a write is core's one table of request fates: a 503 without Retry-After may have run.
    safeToRepeat: requestFate({ status }) === 'not_processed',
    cause: error,
    details,
  })
}

/**
 * Whether a failure says the MCP server (not one of its tools) is sick: what `callTool` threw about
 * the transport or the protocol (connection closed or refused, the SDK's request timeout, a lost
 * session, protocol errors). A result with `isError: true` never does, whatever its text says (the
 * tool ran and reported a problem, often an upstream's), nor do the arguments the model got wrong.
 * Give it to a per-server breaker; a per-tool breaker counts the rest.
 *
 * @example
 * circuitBreaker({ key: serverKey({ filesystem: tools }), isFailure: indictsServer, policy: consecutive({ threshold: 2 }) })
 */
export function indictsServer(error: unknown): boolean {
  if (!ToolError.is(error)) return false
  const source = (error.details as { source?: unknown } | undefined)?.source
  return (
    source === 'mcp_transport' &&
    error.code !== 'invalid_arguments' &&
    error.code !== 'permission_denied' &&
    error.category !== 'recoverable'
  )
}
