// A scripted agent (no network, no API key) whose tools are the published MCP filesystem server's,
// run over stdio behind shallot's default stack: a mistyped path healed by a soft error, then the
// server dies mid-run and one circuit closes off all of its tools.

import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { indictsServer, mcpTools, serverKey } from '@shallot/mcp'
import { type ScriptStep, scriptedModel } from '@shallot/testing'
import { consecutive, createAgent, defaultMiddleware, type RunOutcome } from 'shallot'

const root = realpathSync(mkdtempSync(join(tmpdir(), 'shallot-mcp-')))
mkdirSync(join(root, 'src'))
writeFileSync(join(root, 'src/main.rs'), 'fn main() { println!("hello over MCP"); }\n')
writeFileSync(join(root, 'README.md'), '# demo\n')

const serverEntry = join(
  dirname(createRequire(import.meta.url).resolve('@modelcontextprotocol/server-filesystem/package.json')),
  'dist/index.js',
)

async function connect(): Promise<{ client: Client; transport: StdioClientTransport }> {
  const transport = new StdioClientTransport({ command: process.execPath, args: [serverEntry, root], stderr: 'ignore' })
  const client = new Client({ name: 'shallot-example', version: '0.0.0' })
  await client.connect(transport)
  return { client, transport }
}

function print(outcome: RunOutcome): void {
  for (const message of outcome.transcript) {
    if (message.role === 'assistant' && message.toolCalls.length > 0) {
      for (const call of message.toolCalls) console.log(`model  → ${call.name} ${JSON.stringify(call.args).replaceAll(root, '<project>')}`)
    } else if (message.role === 'tool') {
      console.log(`tool   ${message.ok ? '✓' : '✗'} ${message.content.trim().replaceAll(root, '<project>')}`)
    } else if (message.role === 'assistant') {
      console.log(`model  “${message.content}”`)
    }
  }
  console.log(outcome.status === 'completed' ? `completed in ${outcome.turns} turns` : outcome.report.text)
}

const { client, transport } = await connect()
const tools = await mcpTools(client, { server: 'filesystem' })
console.log(
  `${tools.length} tools from the filesystem server, e.g. ${tools
    .map((t) => `${t.name} (${t.effect})`)
    .slice(0, 3)
    .join(', ')}`,
)
// A quick retry, and one breaker for the whole server that only transport failures open (a tool's own
// isError results, "upstream answered 503", are that tool's business).
const middleware = () =>
  defaultMiddleware({
    retry: { baseMs: 20, capMs: 100 },
    circuitBreaker: { key: serverKey({ filesystem: tools }), isFailure: indictsServer, policy: consecutive({ threshold: 2 }) },
  })

console.log('━━ Scene 1 · A mistyped path, healed by a soft error')
{
  const model = scriptedModel([
    { toolCalls: [{ name: 'read_text_file', args: { path: `${root}/src/mian.rs` } }] },
    ({ lastResults }) =>
      lastResults[0]?.ok ? { text: 'read it' } : { toolCalls: [{ name: 'read_text_file', args: { path: `${root}/src/main.rs` } }] },
    ({ lastResults }) => ({ text: `main.rs prints a greeting: ${lastResults[0]?.content.trim()}` }),
  ])
  print(await createAgent({ model, tools, middleware: middleware() }).run({ input: 'What does src/main.rs do?' }))
}

console.log('━━ Scene 2 · The server dies mid-run: its circuit opens for every tool')
{
  const serverDied = async () => {
    const closed = new Promise<void>((resolve) => {
      client.onclose = resolve
    })
    process.kill(transport.pid as number, 'SIGKILL')
    await closed
  }
  const steps: ScriptStep[] = [
    { toolCalls: [{ name: 'list_directory', args: { path: root } }] },
    async () => {
      await serverDied()
      return { toolCalls: [{ name: 'read_text_file', args: { path: `${root}/README.md` } }] }
    },
    { toolCalls: [{ name: 'get_file_info', args: { path: `${root}/README.md` } }] },
    { toolCalls: [{ name: 'directory_tree', args: { path: root } }] },
    ({ tools: offered }) => ({
      text: `The filesystem server is gone (${offered.find((t) => t.name === 'directory_tree')?.note ?? 'no note'}); I will stop here.`,
    }),
  ]
  print(await createAgent({ model: scriptedModel(steps), tools, middleware: middleware() }).run({ input: 'Summarise the project' }))
}

await client.close()
rmSync(root, { recursive: true, force: true })
