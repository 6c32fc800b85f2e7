import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { circuitBreaker, consecutive } from '@shallot/circuit-breaker'
import { createAgent, type ModelAdapter, type RunOutcome } from '@shallot/core'
import { mcpTools, serverKey } from './index.js'

export async function askFilesystem(model: ModelAdapter, serverEntry: string, dir: string): Promise<RunOutcome> {
  const client = new Client({ name: 'my-agent', version: '1.0.0' })
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [serverEntry, dir] }))
  try {
    const tools = await mcpTools(client, { server: 'filesystem' }) // validated by their JSON Schemas
    const breaker = circuitBreaker({ key: serverKey({ filesystem: tools }), policy: consecutive({ threshold: 2 }) })
    const agent = createAgent({ model, tools, middleware: [breaker] })
    return await agent.run({ input: `What does ${dir}/src/main.rs do?` })
  } finally {
    await client.close()
  }
}
