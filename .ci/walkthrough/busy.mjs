// An MCP server over stdio for the walk-through: a read that is rate limited until a file exists (a service that comes back).
import { existsSync } from 'node:fs'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import { z } from 'zod'

const server = new McpServer({ name: 'busy', version: '1.0.0' })
server.registerTool(
  'busy_read',
  {
    description: 'Rate limited until the file exists, then reads it.',
    inputSchema: { path: z.string() },
    annotations: { readOnlyHint: true },
  },
  async ({ path }) =>
    existsSync(path)
      ? { content: [{ type: 'text', text: `${path} is back` }] }
      : { isError: true, content: [{ type: 'text', text: 'rate limited: too many requests' }] },
)
await server.connect(new StdioServerTransport())
