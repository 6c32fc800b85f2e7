import { type AnyTool, parseOptions, TOOL_EFFECTS } from '@shallot/core'
import { z } from 'zod'
import { McpConnection, type TransportFactory } from './mcp-connection.js'
import { type McpProgress, mcpTool, shallotToolName } from './mcp-tool.js'
import type { McpClient, McpToolDescription } from './types.js'

/** The most pages of `tools/list` read: a server whose `nextCursor` never ends fails start-up. */
const MAX_PAGES = 100
const DEFAULT_MAX_TOOLS = 1000

/** Options of {@link mcpTools}. */
export const mcpToolsOptionsSchema = z
  .strictObject({
    /** The server's name in messages, `details` and `serverKey`. Default: the name the server announced, else `mcp`. */
    server: z.string().min(1).optional(),
    /** Put before every tool name (`fs_` → `fs_read_file`), to keep several servers' tools apart. */
    prefix: z
      .string()
      .regex(/^[A-Za-z0-9_.-]*$/, 'may hold only letters, digits, "_", "-" and "."')
      .default(''),
    /**
     * The most tools the server may list. A server that lists more, pages past 100 pages or sends a
     * cursor twice fails start-up with an error naming it. Default 1000.
     */
    maxTools: z.number().int().positive().default(DEFAULT_MAX_TOOLS),
    /** Only these tools (by their MCP names). Default: all. */
    include: z.array(z.string()).optional(),
    /** Effect per MCP tool name, overriding the annotations (which are the server's claims). */
    effects: z.record(z.string(), z.enum(TOOL_EFFECTS)).default({}),
    /** `text` (default): the result's text; `result`: the whole `CallToolResult`. */
    output: z.enum(['text', 'result']).default('text'),
    /** The request's deadline, in ms, restarted by every progress notification. Default: the SDK's (60 s). */
    requestTimeoutMs: z.number().int().positive().optional(),
    /** The hard cap on one call, progress or not, in ms. Default: none. */
    maxTotalMs: z.number().int().positive().optional(),
    /** Called with every progress notification of every tool. */
    onProgress: z
      .custom<(progress: McpProgress) => void>((v) => typeof v === 'function', { message: 'must be a function (progress) => void' })
      .optional(),
    /**
     * Makes a fresh transport, so the client can reconnect after its transport failed (a dead stdio
     * server is respawned, an HTTP session re-initialised): the next call reconnects first. Behind a
     * per-server breaker, that call is the half-open probe. Default: no reconnection.
     */
    transport: z.custom<TransportFactory>((v) => typeof v === 'function', { message: 'must be a function () => Transport' }).optional(),
  })
  .superRefine((o, issues) => {
    if (o.maxTotalMs !== undefined && o.requestTimeoutMs !== undefined && o.maxTotalMs < o.requestTimeoutMs) {
      issues.addIssue({ code: 'custom', path: ['maxTotalMs'], message: `must be at least requestTimeoutMs (${o.requestTimeoutMs})` })
    }
  })

export type McpToolsOptions = z.input<typeof mcpToolsOptionsSchema>

/**
 * Every page of the server's `tools/list`, bounded: at most `maxTools` tools and {@link MAX_PAGES}
 * pages, and a cursor the server already sent ends the listing with an error rather than a loop.
 */
async function listAll(client: McpClient, server: string, maxTools: number): Promise<McpToolDescription[]> {
  const tools: McpToolDescription[] = []
  const seen = new Set<string>()
  let cursor: string | undefined
  for (let pages = 1; ; pages++) {
    const page = await client.listTools(cursor === undefined ? undefined : { cursor })
    if (!Array.isArray(page?.tools)) throw new TypeError(`mcpTools(): server "${server}" answered tools/list without a tools array`)
    if (tools.length + page.tools.length > maxTools) {
      throw new RangeError(`mcpTools(): server "${server}" lists more than ${maxTools} tools; pass maxTools to allow more`)
    }
    for (const tool of page.tools) tools.push(tool)
    cursor = page.nextCursor
    if (cursor === undefined) return tools
    if (seen.has(cursor))
      throw new RangeError(`mcpTools(): server "${server}" sent the same tools/list cursor twice; its listing never ends`)
    if (pages >= MAX_PAGES)
      throw new RangeError(`mcpTools(): server "${server}" paged tools/list past ${MAX_PAGES} pages; its listing never ends`)
    seen.add(cursor)
  }
}

/**
 * Lists a connected MCP client's tools and turns each into a shallot tool (see {@link mcpTool}), so a
 * stack sits in front of any MCP server: arguments validated by the tool's JSON Schema, effects from
 * its annotations, `isError` results and transport failures as classified soft errors.
 *
 * @example
 * const client = new Client({ name: 'my-agent', version: '1.0.0' })
 * await client.connect(new StdioClientTransport({ command: 'npx', args: ['@modelcontextprotocol/server-filesystem', dir] }))
 * const tools = await mcpTools(client, { server: 'filesystem' })
 * const agent = createAgent({ model, tools, middleware: [circuitBreaker({ key: serverKey({ filesystem: tools }) })] })
 */
export async function mcpTools(client: McpClient, options?: McpToolsOptions): Promise<AnyTool[]> {
  if (typeof client?.listTools !== 'function' || typeof client.callTool !== 'function') {
    throw new TypeError('mcpTools() takes a connected MCP Client (from @modelcontextprotocol/sdk/client/index.js)')
  }
  const o = parseOptions('mcpTools()', mcpToolsOptionsSchema, options)
  const server = o.server ?? client.getServerVersion()?.name ?? 'mcp'
  const listed = await listAll(client, server, o.maxTools)
  const known = new Set(listed.map((tool) => tool.name))
  for (const name of [...(o.include ?? []), ...Object.keys(o.effects)]) {
    if (!known.has(name)) throw new TypeError(`mcpTools(): server "${server}" has no tool named "${name}"; it has ${[...known].join(', ')}`)
  }
  const wanted = o.include === undefined ? listed : listed.filter((tool) => o.include?.includes(tool.name))
  if (o.transport !== undefined && (typeof client.connect !== 'function' || typeof client.close !== 'function')) {
    throw new TypeError('mcpTools(): option transport needs a Client with connect() and close() to reconnect')
  }
  const connection = new McpConnection(client, o.transport)
  const names = new Map<string, string>()
  return wanted.map((tool) => {
    const name = shallotToolName(tool.name, o.prefix)
    const clash = names.get(name)
    if (clash !== undefined) {
      throw new TypeError(`mcpTools(): tools "${clash}" and "${tool.name}" both become "${name}"; use include to pick one`)
    }
    names.set(name, tool.name)
    const effect = o.effects[tool.name]
    return mcpTool(client, tool, {
      name,
      server,
      output: o.output,
      connection,
      ...(effect === undefined ? {} : { effect }),
      ...(o.requestTimeoutMs === undefined ? {} : { requestTimeoutMs: o.requestTimeoutMs }),
      ...(o.maxTotalMs === undefined ? {} : { maxTotalMs: o.maxTotalMs }),
      ...(o.onProgress === undefined ? {} : { onProgress: o.onProgress }),
    })
  })
}
