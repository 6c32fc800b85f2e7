import { mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'

/** The published filesystem server's entry point, as installed from the lockfile. */
export const filesystemServerEntry = join(
  dirname(createRequire(import.meta.url).resolve('@modelcontextprotocol/server-filesystem/package.json')),
  'dist/index.js',
)

/** A temporary project folder with the given files (relative paths). */
export async function tempProject(files: Record<string, string>): Promise<{ root: string; remove: () => Promise<void> }> {
  const root = await realpath(await mkdtemp(join(tmpdir(), 'shallot-mcp-')))
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(root, path)), { recursive: true })
    await writeFile(join(root, path), text)
  }
  return { root, remove: () => rm(root, { recursive: true, force: true }) }
}

/** `@modelcontextprotocol/server-filesystem` on `root`, over stdio, run by this very Node. */
export async function startFilesystemServer(root: string): Promise<{ client: Client; transport: StdioClientTransport }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [filesystemServerEntry, root],
    cwd: root,
    stderr: 'ignore',
  })
  const client = new Client({ name: 'shallot-test', version: '0.0.0' })
  await client.connect(transport)
  return { client, transport }
}
