import type { Readable } from 'node:stream'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { type AnyTool, sanitize } from '@shallot/core'
import { mcpTools } from '@shallot/mcp'
import { UsageError } from '../usage.js'

/** One MCP server to start: from `--mcp "<command line>"` or a config file's `mcpServers:`. */
export interface McpServerSpec {
  readonly name: string
  readonly command: string
  readonly args: readonly string[]
  readonly env?: Readonly<Record<string, string>>
  readonly cwd?: string
}

/** The servers' tools, and how to stop every server. */
export interface McpServers {
  readonly tools: AnyTool[]
  /** Closes every client, which ends its server process. Never rejects. */
  close(): Promise<void>
}

/** How long a server may take to start and list its tools. */
const CONNECT_MS = 30_000

/** The last bytes a server wrote to stderr: the reason it failed to start is usually there. */
function stderrTail(stream: Readable | null): () => string {
  let tail = ''
  stream?.on('data', (chunk: Buffer) => {
    tail = (tail + chunk.toString('utf8')).slice(-2000)
  })
  return () => tail.trim().split('\n').filter(Boolean).at(-1) ?? ''
}

function transportOf(spec: McpServerSpec): StdioClientTransport {
  return new StdioClientTransport({
    command: spec.command,
    args: [...spec.args],
    env: { ...getDefaultEnvironment(), ...spec.env },
    ...(spec.cwd === undefined ? {} : { cwd: spec.cwd }),
    // Piped, not inherited: a server's banner is not part of the run's timeline, but its last words explain a failed start.
    stderr: 'pipe',
  })
}

async function connect(spec: McpServerSpec, clients: Client[]): Promise<AnyTool[]> {
  const transport = transportOf(spec)
  const lastWords = stderrTail(transport.stderr as Readable | null)
  const client = new Client({ name: 'shallot-run', version: '0.1.0' })
  clients.push(client)
  try {
    await client.connect(transport, { timeout: CONNECT_MS })
    return await mcpTools(client, {
      server: spec.name,
      // A dead server is respawned by its next call (behind the stack's breaker, the half-open probe).
      transport: () => {
        const fresh = transportOf(spec)
        stderrTail(fresh.stderr as Readable | null)
        return fresh
      },
    })
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err)
    const said = lastWords()
    throw new UsageError(
      `MCP server "${spec.name}" (${[spec.command, ...spec.args].join(' ').slice(0, 200)}) did not start: ${sanitize(why).slice(0, 300)}${said === '' ? '' : ` (it said: ${sanitize(said).slice(0, 300)})`}`,
    )
  }
}

/**
 * Starts every server over stdio, lists its tools and wraps them as shallot tools (`mcpTools`). A
 * server that does not start, or two servers offering one tool name, is a `UsageError`; the
 * servers already started are closed first.
 *
 * @example
 * const servers = await startMcpServers([{ name: 'fs', command: 'npx', args: ['-y', '@modelcontextprotocol/server-filesystem', '.'] }])
 */
export async function startMcpServers(specs: readonly McpServerSpec[]): Promise<McpServers> {
  const clients: Client[] = []
  const close = async () => {
    await Promise.allSettled(clients.map((c) => c.close()))
  }
  try {
    const tools: AnyTool[] = []
    const owner = new Map<string, string>()
    for (const spec of specs) {
      for (const tool of await connect(spec, clients)) {
        const first = owner.get(tool.name)
        if (first !== undefined)
          throw new UsageError(`MCP servers "${first}" and "${spec.name}" both offer a tool "${tool.name}"; start only one of them`)
        owner.set(tool.name, spec.name)
        tools.push(tool)
      }
    }
    return { tools, close }
  } catch (err) {
    await close()
    throw err
  }
}
