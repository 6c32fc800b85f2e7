// A real MCP server process (SDK 1.x, stdio) whose `deploy_status` tool reports an upstream outage
// the way many wrappers do: a result with isError: true quoting the upstream's 503. `ping` is healthy.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'

const server = new McpServer({ name: 'ops', version: '1.0.0' })
server.registerTool('deploy_status', { description: 'Status of the deploy service', annotations: { readOnlyHint: true } }, async () => ({
  isError: true,
  content: [{ type: 'text', text: 'deploy API answered HTTP 503 Service Unavailable' }],
}))
server.registerTool('ping', { description: 'Answers pong', annotations: { readOnlyHint: true } }, async () => ({
  content: [{ type: 'text', text: 'pong' }],
}))
await server.connect(new StdioServerTransport())
