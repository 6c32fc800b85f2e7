// Three moments of a LangChain agent (createAgent) with one extra line, shallotMiddleware(), driven by
// LangChain's own fake model (no network, no API key): a mistyped path healed by a soft error, a sick
// service whose circuit opens, and a stubborn model stopped by stuck-loop as a hard error.

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { AIMessage, type BaseMessage, ToolMessage } from '@langchain/core/messages'
import { fakeModel } from '@langchain/core/testing'
import { loopErrorOf, shallotMiddleware } from '@shallot/langchain'
import { createAgent, tool } from 'langchain'
import { consecutive, defaultMiddleware } from 'shallot'
import { z } from 'zod'

const root = mkdtempSync(join(tmpdir(), 'shallot-langchain-'))
mkdirSync(join(root, 'src'))
writeFileSync(join(root, 'src/main.rs'), 'fn main() { println!("hello from LangChain"); }\n')

// A plain fs call: the stack's error classifier turns its ENOENT into a soft not_found.
const readFileTool = tool(({ path }) => readFile(join(root, path), 'utf8'), {
  name: 'read_file',
  description: 'Read a UTF-8 text file from the project',
  schema: z.object({ path: z.string().min(1) }),
})

const hide = (text: string) => text.replaceAll(root, '<project>').trim()
const lastTool = (messages: BaseMessage[]) => {
  const last = messages.at(-1)
  return ToolMessage.isInstance(last) ? last : undefined
}
const call = (name: string, args: Record<string, unknown>) =>
  new AIMessage({ content: '', tool_calls: [{ name, args, id: `call_${Math.random().toString(36).slice(2, 8)}`, type: 'tool_call' }] })

function print(messages: BaseMessage[]): void {
  for (const message of messages) {
    if (AIMessage.isInstance(message) && (message.tool_calls?.length ?? 0) > 0) {
      for (const c of message.tool_calls ?? []) console.log(`model  → ${c.name} ${JSON.stringify(c.args)}`)
    } else if (ToolMessage.isInstance(message)) {
      console.log(`tool   ${message.status === 'error' ? '✗' : '✓'} ${hide(String(message.content))}`)
    } else if (AIMessage.isInstance(message)) {
      console.log(`model  “${String(message.content)}”`)
    }
  }
}

console.log('━━ Scene 1 · A mistyped path, healed by a soft error')
{
  const model = fakeModel()
    .respondWithTools([{ name: 'read_file', args: { path: 'src/mian.rs' } }])
    .respond((messages) => (lastTool(messages)?.status === 'error' ? call('read_file', { path: 'src/main.rs' }) : new AIMessage('read it')))
    .respond((messages) => new AIMessage(`main.rs prints a greeting: ${hide(String(lastTool(messages)?.content))}`))
  const agent = createAgent({
    model,
    tools: [readFileTool],
    middleware: [shallotMiddleware({ middleware: defaultMiddleware(), effects: { read_file: 'read' } })],
  })
  const { messages } = await agent.invoke({ messages: [{ role: 'user', content: 'What does src/main.rs do?' }] })
  print(messages.slice(1))
}

console.log('━━ Scene 2 · A sick service: two failures open its circuit')
{
  let executions = 0
  const deployStatus = tool(
    async (): Promise<string> => {
      executions++
      throw Object.assign(new Error('Service Unavailable'), { status: 503 })
    },
    { name: 'deploy_status', description: 'Status of the deploy service', schema: z.object({ env: z.enum(['prod', 'staging', 'dev']) }) },
  )
  const model = fakeModel()
    .respondWithTools([{ name: 'deploy_status', args: { env: 'prod' } }])
    .respondWithTools([{ name: 'deploy_status', args: { env: 'staging' } }])
    .respondWithTools([{ name: 'deploy_status', args: { env: 'dev' } }])
    .respond(new AIMessage('The deploy service is down; I will report that instead of waiting.'))
  // No retry here, so each model turn is one attempt and the story stays short.
  const middleware = defaultMiddleware({ retry: false, circuitBreaker: { policy: consecutive({ threshold: 2 }) } })
  const agent = createAgent({
    model,
    tools: [deployStatus],
    middleware: [shallotMiddleware({ middleware, effects: { deploy_status: 'read' } })],
  })
  const { messages } = await agent.invoke({ messages: [{ role: 'user', content: 'Is the deploy healthy?' }] })
  print(messages.slice(1))
  console.log(`deploy_status ran ${executions} times for 3 calls`)
}

console.log('━━ Scene 3 · A stubborn model, stopped as a hard error')
{
  let model = fakeModel()
  for (let turn = 0; turn < 6; turn++) {
    model = model.respond((messages) => {
      const seen = lastTool(messages)
      if (seen !== undefined) console.log(`tool   ✗ ${hide(String(seen.content))}`)
      console.log('model  → read_file {"path":"src/mian.rs"}')
      return call('read_file', { path: 'src/mian.rs' })
    })
  }
  const agent = createAgent({
    model,
    tools: [readFileTool],
    middleware: [shallotMiddleware({ middleware: defaultMiddleware(), effects: { read_file: 'read' } })],
  })
  try {
    await agent.invoke({ messages: [{ role: 'user', content: 'What does src/main.rs do?' }] })
    console.log('completed (unexpected)')
  } catch (error) {
    const hard = loopErrorOf(error)
    console.log(hard === undefined ? `failed: ${String(error)}` : `invoke rejected: LoopError ${hard.kind}: ${hide(hard.message)}`)
  }
}

rmSync(root, { recursive: true, force: true })
