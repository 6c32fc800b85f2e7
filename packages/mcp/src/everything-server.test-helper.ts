import { type ChildProcess, spawn } from 'node:child_process'
import { createRequire } from 'node:module'
import { createServer } from 'node:net'
import { dirname, join } from 'node:path'
import { Client as ClientV2, StreamableHTTPClientTransport as HttpV2 } from '@modelcontextprotocol/client'
import { StdioClientTransport as StdioV2 } from '@modelcontextprotocol/client/stdio'
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport as StdioV1 } from '@modelcontextprotocol/sdk/client/stdio.js'
import { StreamableHTTPClientTransport as HttpV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { McpClient } from './types.js'

/** The published everything server's entry point, as installed from the lockfile. */
export const everythingEntry = join(
  dirname(createRequire(import.meta.url).resolve('@modelcontextprotocol/server-everything/package.json')),
  'dist/index.js',
)

export type Sdk = 'v1' | 'v2'
export type Wire = 'stdio' | 'http'

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer()
    probe.once('error', reject)
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number }
      probe.close(() => resolve(port))
    })
  })
}

/** `server-everything streamableHttp` as a real process on a free port; resolves once it listens. */
export async function startEverythingHttp(
  port?: number,
): Promise<{ url: string; port: number; child: ChildProcess; stop: () => Promise<void> }> {
  const chosen = port ?? (await freePort())
  const child = spawn(process.execPath, [everythingEntry, 'streamableHttp'], {
    env: { ...process.env, PORT: String(chosen) },
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  await new Promise<void>((resolve, reject) => {
    let said = ''
    child.stderr?.on('data', (data: Buffer) => {
      said += data.toString()
      if (said.includes('listening on port')) resolve()
    })
    child.once('exit', (code) => reject(new Error(`server-everything exited (${code}) before listening: ${said}`)))
  })
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
    child.kill('SIGKILL')
    await exited
  }
  return { url: `http://127.0.0.1:${chosen}/mcp`, port: chosen, child, stop }
}

/** A fresh transport for `sdk` over `wire`: stdio spawns the server, http talks to `url`. */
export function everythingTransport(sdk: Sdk, wire: Wire, url?: string): unknown {
  if (wire === 'http') return sdk === 'v1' ? new HttpV1(new URL(url as string)) : new HttpV2(new URL(url as string))
  const params = { command: process.execPath, args: [everythingEntry, 'stdio'], stderr: 'ignore' as const }
  return sdk === 'v1' ? new StdioV1(params) : new StdioV2(params)
}

/** A client of `sdk`, connected to `transport`. */
export async function connectClient(sdk: Sdk, transport: unknown): Promise<McpClient & { close(): Promise<void> }> {
  const client =
    sdk === 'v1' ? new ClientV1({ name: 'shallot-test', version: '0.0.0' }) : new ClientV2({ name: 'shallot-test', version: '0.0.0' })
  await client.connect(transport as never)
  return client as unknown as McpClient & { close(): Promise<void> }
}

/** The pid of a stdio transport's child (1.x and 2.x both expose `pid`). */
export const pidOf = (transport: unknown) => (transport as { pid: number | null }).pid
