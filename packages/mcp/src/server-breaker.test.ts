import { fileURLToPath } from 'node:url'
import { Client as ClientV2 } from '@modelcontextprotocol/client'
import { StdioClientTransport as StdioV2 } from '@modelcontextprotocol/client/stdio'
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport as StdioV1 } from '@modelcontextprotocol/sdk/client/stdio.js'
import { circuitBreaker, consecutive } from '@shallot/circuit-breaker'
import { createStack } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { afterEach, describe, expect, it } from 'vitest'
import { indictsServer, mcpTools, serverKey } from './index.js'
import type { McpClient } from './types.js'

const fixture = fileURLToPath(new URL('./upstream-server.fixture.mjs', import.meta.url))
let open: Array<{ close(): Promise<void> }> = []
afterEach(async () => {
  await Promise.all(open.map((client) => client.close()))
  open = []
})

async function opsServer(sdk: 'v1' | 'v2'): Promise<McpClient> {
  const params = { command: process.execPath, args: [fixture], stderr: 'ignore' as const }
  const client = sdk === 'v1' ? new ClientV1({ name: 't', version: '0' }) : new ClientV2({ name: 't', version: '0' })
  await client.connect((sdk === 'v1' ? new StdioV1(params) : new StdioV2(params)) as never)
  open.push(client)
  return client as unknown as McpClient
}

const statusTwiceThenPing = async (stack: ReturnType<typeof createStack>) => {
  const codes: string[] = []
  for (const [id, name] of [
    ['s1', 'deploy_status'],
    ['s2', 'deploy_status'],
    ['p1', 'ping'],
    ['s3', 'deploy_status'],
  ] as const) {
    const result = await stack.dispatch({ id, name, args: {} })
    codes.push(result.ok ? 'ok' : (result.error?.code ?? '?'))
  }
  return codes
}

describe.each(['v1', 'v2'] as const)(
  'a server whose tool quotes an upstream 503 (SDK %s, a real stdio process)',
  { timeout: 30_000 },
  (sdk) => {
    it('without indictsServer, the per-server breaker refuses the healthy ping', async () => {
      const tools = await mcpTools(await opsServer(sdk), { server: 'ops' })
      const breaker = circuitBreaker({ key: serverKey({ ops: tools }), policy: consecutive({ threshold: 2 }) })
      expect(await statusTwiceThenPing(createStack({ tools, middleware: [breaker], clock: manualClock() }))).toEqual([
        'upstream_error',
        'upstream_error',
        'circuit_open',
        'circuit_open',
      ])
    })

    it('with indictsServer, the isError results open only the tool’s own breaker: ping still answers', async () => {
      const tools = await mcpTools(await opsServer(sdk), { server: 'ops' })
      const perServer = circuitBreaker({ key: serverKey({ ops: tools }), isFailure: indictsServer, policy: consecutive({ threshold: 2 }) })
      const perTool = circuitBreaker({ policy: consecutive({ threshold: 2 }) })
      expect(await statusTwiceThenPing(createStack({ tools, middleware: [perServer, perTool], clock: manualClock() }))).toEqual([
        'upstream_error',
        'upstream_error',
        'ok',
        'circuit_open',
      ])
    })
  },
)
