import type { Readable } from 'node:stream'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { type AnyTool, sanitize } from '@shallot/core'
import { mcpTools, type ServerEnvInherit, serverEnv } from '@shallot/mcp'
import { UsageError } from '../usage.js'

/** One MCP server to start: from `--mcp "<command line>"` or a config file's `mcpServers:`. */
export interface McpServerSpec {
  readonly name: string
  readonly command: string
  readonly args: readonly string[]
  readonly env?: Readonly<Record<string, string>>
  readonly cwd?: string
  /** Which of this process's variables the server gets (`--mcp-env`): default `all`. */
  readonly inherit?: ServerEnvInherit
}

/** The servers' tools, and how to stop every server. */
export interface McpServers {
  readonly tools: AnyTool[]
  /** Closes every client, which ends its server process. Never rejects. */
  close(): Promise<void>
}

/** How long a server may take to start and list its tools. */
const CONNECT_MS = 30_000

/** How long a failed server's last stderr bytes are waited for after its pipe closed the connection. */
const STDERR_DRAIN_MS = 500

/** Lines that say where more is written, or how a stack trace was printed, rather than what went wrong. */
const NOISE = [/complete log of this run can be found/i, /^npm (error|ERR!)$/, /^at /, /^Node\.js v\d/, /^[\^~{}()[\];,]*$/]
const TELLING = [/error|not found|denied|refused|cannot|can't|failed|invalid|missing/i, /ERR!|\bE[A-Z0-9]{2,}\b/]

/**
 * The lines of a server's stderr that tell why it did not start: its last three that say what went
 * wrong (npm's "404 Not Found - GET …", not "A complete log of this run can be found in …"), else
 * its last three that are not noise, joined; each cut at 300 characters.
 */
export function usefulStderr(text: string): string {
  const lines = text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => !NOISE.some((n) => n.test(l)))
  const telling = lines.filter((l) => TELLING.some((t) => t.test(l)))
  return (telling.length > 0 ? telling : lines)
    .slice(-3)
    .map((l) => (l.length > 300 ? `${l.slice(0, 299)}…` : l))
    .join(' | ')
}

/** The last bytes a server wrote to stderr, and a wait for the rest of them once it is gone. */
function stderrTail(stream: Readable | null): { said: () => string; drained: () => Promise<void> } {
  let tail = ''
  let ended = stream === null
  stream?.on('data', (chunk: Buffer) => {
    tail = (tail + chunk.toString('utf8')).slice(-4000)
  })
  stream?.once('end', () => {
    ended = true
  })
  return {
    said: () => usefulStderr(tail),
    drained: () =>
      ended || stream === null
        ? Promise.resolve()
        : new Promise<void>((done) => {
            const timer = setTimeout(done, STDERR_DRAIN_MS)
            stream.once('end', () => {
              clearTimeout(timer)
              done()
            })
          }),
  }
}

function transportOf(spec: McpServerSpec): StdioClientTransport {
  return new StdioClientTransport({
    command: spec.command,
    args: [...spec.args],
    // Every variable by default: NODE_EXTRA_CA_CERTS and the proxy settings are what let `npx` fetch the server.
    env: serverEnv({ inherit: spec.inherit ?? 'all', ...(spec.env === undefined ? {} : { env: spec.env }) }),
    ...(spec.cwd === undefined ? {} : { cwd: spec.cwd }),
    // Piped, not inherited: a server's banner is not part of the run's timeline, but its last words explain a failed start.
    stderr: 'pipe',
  })
}

async function connect(spec: McpServerSpec, clients: Client[]): Promise<AnyTool[]> {
  const transport = transportOf(spec)
  const stderr = stderrTail(transport.stderr as Readable | null)
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
    await stderr.drained()
    const said = stderr.said()
    throw new UsageError(
      `MCP server "${spec.name}" (${[spec.command, ...spec.args].join(' ').slice(0, 200)}) did not start: ${sanitize(why).slice(0, 300)}${said === '' ? '' : ` (it said: ${sanitize(said).slice(0, 600)})`}`,
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
