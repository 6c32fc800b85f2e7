import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { createAgent, type RunOutcome } from '@shallot/agent'
import { circuitBreaker, consecutive } from '@shallot/circuit-breaker'
import type { ModelAdapter } from '@shallot/core'
import { indictsServer, mcpTools, serverKey } from './index.js'

export async function askFilesystem(model: ModelAdapter, serverEntry: string, dir: string): Promise<RunOutcome> {
  const spawnServer = () => new StdioClientTransport({ command: process.execPath, args: [serverEntry, dir] })
  const client = new Client({ name: 'my-agent', version: '1.0.0' })
  await client.connect(spawnServer())
  try {
    // Validated by their JSON Schemas; after the server dies, the next call respawns it.
    const tools = await mcpTools(client, { server: 'filesystem', transport: spawnServer, requestTimeoutMs: 30_000, maxTotalMs: 300_000 })
    const middleware = [
      // The server: only transport failures count (a dead process, a lost session, the SDK's deadline).
      circuitBreaker({ key: serverKey({ filesystem: tools }), isFailure: indictsServer, policy: consecutive({ threshold: 2 }) }),
      // Each tool: its own failures, isError results included.
      circuitBreaker({ policy: consecutive({ threshold: 3 }) }),
    ]
    const agent = createAgent({ model, tools, middleware })
    return await agent.run({ input: `What does ${dir}/src/main.rs do?` })
  } finally {
    await client.close()
  }
}
