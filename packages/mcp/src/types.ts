import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import type { Tool } from '@modelcontextprotocol/sdk/types.js'

/** The three methods shallot uses from an MCP `Client` (a connected `Client` fits as is). */
export type McpClient = Pick<Client, 'listTools' | 'callTool' | 'getServerVersion'>

/** A tool as the server lists it (`client.listTools()`). */
export type McpToolDescription = Tool

/** What a `tools/call` answered. */
export type McpCallResult = Awaited<ReturnType<Client['callTool']>>

/** Which server and tool a failure belongs to, for messages and `details`. */
export interface McpCallSite {
  readonly server: string
  /** The tool's name on the server. */
  readonly tool: string
}
