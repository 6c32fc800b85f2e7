// A real MCP server process (SDK 1.x, stdio) whose `env` tool answers the value of one of its environment variables.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import { z } from 'zod'

const server = new McpServer({ name: 'env', version: '1.0.0' })
server.registerTool(
  'env',
  { description: 'The value of an environment variable', inputSchema: { name: z.string() }, annotations: { readOnlyHint: true } },
  async ({ name }) => ({ content: [{ type: 'text', text: JSON.stringify(Object.hasOwn(process.env, name) ? process.env[name] : null) }] }),
)
await server.connect(new StdioServerTransport())
