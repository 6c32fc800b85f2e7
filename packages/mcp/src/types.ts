/** A tool as the server lists it (`client.listTools()`), in the fields shallot reads; SDK v1 and v2 `Tool`s fit. */
export interface McpToolDescription {
  readonly name: string
  readonly title?: string | undefined
  readonly description?: string | undefined
  readonly inputSchema?: unknown
  readonly annotations?:
    | {
        readonly title?: string | undefined
        readonly readOnlyHint?: boolean | undefined
        readonly idempotentHint?: boolean | undefined
        readonly destructiveHint?: boolean | undefined
        readonly openWorldHint?: boolean | undefined
      }
    | undefined
}

/** What a `tools/call` answered (SDK v1 and v2). */
export interface McpCallResult {
  readonly content?: readonly unknown[] | undefined
  readonly isError?: boolean | undefined
  readonly structuredContent?: unknown
  readonly toolResult?: unknown
}

/** Per-request options both SDK majors take. */
export interface McpRequestOptions {
  signal?: AbortSignal
  timeout?: number
  resetTimeoutOnProgress?: boolean
  maxTotalTimeout?: number
  onprogress?: (progress: { progress: number; total?: number | undefined; message?: string | undefined }) => void
}

/**
 * The methods shallot uses from an MCP `Client`: a connected `Client` of `@modelcontextprotocol/sdk` 1.x
 * (`callTool(params, resultSchema?, options?)`) or of `@modelcontextprotocol/client` 2.x
 * (`callTool(params, options?)`) fits as is. `connect` and `close` are used only to reconnect.
 */
export interface McpClient {
  listTools(params?: { cursor?: string }): Promise<{ tools: readonly McpToolDescription[]; nextCursor?: string | undefined }>
  callTool(params: { name: string; arguments?: Record<string, unknown> }, ...rest: never[]): Promise<unknown>
  getServerVersion(): { readonly name: string } | undefined
  connect?(transport: never): Promise<void>
  close?(): Promise<void>
}

/** Which server and tool a failure belongs to, for messages and `details`. */
export interface McpCallSite {
  readonly server: string
  /** The tool's name on the server. */
  readonly tool: string
}
