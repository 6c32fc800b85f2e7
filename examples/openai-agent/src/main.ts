// Three moments of an OpenAI Agents SDK run whose function tools sit behind shallot's default stack,
// on a scripted model that implements the SDK's Model interface (no network, no API key): a mistyped
// path healed by a soft error, a sick service whose circuit opens, and a stubborn model stopped by
// stuck-loop as a hard error.

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Agent, type RunResult, run, setTracingDisabled } from '@openai/agents'
import { shallotFunctionTools } from '@shallot/openai-agents'
import { lastOutputs, scriptedModel } from '@shallot/openai-agents/testing'
import { consecutive, defaultMiddleware, LoopError } from 'shallot'
import { z } from 'zod'

// The SDK exports traces to OpenAI by default; this example has no API key and no network.
setTracingDisabled(true)

const root = mkdtempSync(join(tmpdir(), 'shallot-openai-agents-'))
mkdirSync(join(root, 'src'))
writeFileSync(join(root, 'src/main.rs'), 'fn main() { println!("hello from the Agents SDK"); }\n')

const hide = (text: string) => text.replaceAll(root, '<project>').trim()

const readFileSpec = {
  name: 'read_file',
  description: 'Read a UTF-8 text file from the project',
  parameters: z.object({ path: z.string().min(1) }),
  effect: 'read' as const,
  // A plain fs call: the stack's error classifier turns its ENOENT into a soft not_found.
  execute: ({ path }: { path: string }, { signal }: { signal: AbortSignal }) => readFile(join(root, path), { encoding: 'utf8', signal }),
}

// biome-ignore lint/suspicious/noExplicitAny: prints the transcript of any agent's run
function printRun(result: RunResult<any, any>): void {
  for (const item of result.newItems) {
    const raw = item.rawItem as { type?: string; name?: string; arguments?: string; output?: { text?: string } | string }
    if (raw.type === 'function_call') console.log(`model  → ${raw.name} ${raw.arguments}`)
    if (raw.type === 'function_call_result') {
      const text = hide(typeof raw.output === 'string' ? raw.output : String(raw.output?.text))
      console.log(text.startsWith('{"error"') ? `tool   ✗ ${text}` : `tool   ✓ ${text}`)
    }
  }
  console.log(`model  “${String(result.finalOutput)}”`)
}

const agentWith = (model: ReturnType<typeof scriptedModel>, tools: ReturnType<typeof shallotFunctionTools>['tools']) =>
  new Agent({ name: 'coder', instructions: 'Answer questions about the project.', model, tools })

console.log('━━ Scene 1 · A mistyped path, healed by a soft error')
{
  const model = scriptedModel([
    { calls: [{ name: 'read_file', args: { path: 'src/mian.rs' } }] },
    (request) =>
      lastOutputs(request)[0]?.includes('not_found')
        ? { calls: [{ name: 'read_file', args: { path: 'src/main.rs' } }] }
        : { text: 'read it' },
    (request) => ({ text: `main.rs prints a greeting: ${lastOutputs(request)[0]?.trim()}` }),
  ])
  const shallot = shallotFunctionTools([readFileSpec], { middleware: defaultMiddleware(), limits: { maxSteps: 20 } })
  const result = await run(agentWith(model, shallot.tools), 'What does src/main.rs do?', { signal: shallot.signal, maxTurns: 10 })
  printRun(result)
  console.log(`completed in ${model.requests.length} model turns`)
}

console.log('━━ Scene 2 · A sick service: two failures open its circuit')
{
  let executions = 0
  const deployStatus = {
    name: 'deploy_status',
    description: 'Status of the deploy service',
    parameters: z.object({ env: z.enum(['prod', 'staging', 'dev']) }),
    effect: 'read' as const,
    execute: async (): Promise<string> => {
      executions++
      throw Object.assign(new Error('Service Unavailable'), { status: 503 })
    },
  }
  const ask = (env: string) => ({ calls: [{ name: 'deploy_status', args: { env } }] })
  const model = scriptedModel([
    ask('prod'),
    ask('staging'),
    ask('dev'),
    { text: 'The deploy service is down; I will report that instead of waiting.' },
  ])
  // No retry here, so each model turn is one attempt and the story stays short.
  const middleware = defaultMiddleware({ retry: false, circuitBreaker: { policy: consecutive({ threshold: 2 }) } })
  const shallot = shallotFunctionTools([deployStatus], { middleware })
  printRun(await run(agentWith(model, shallot.tools), 'Is the deploy healthy?', { signal: shallot.signal, maxTurns: 10 }))
  console.log(`deploy_status ran ${executions} times for 3 calls`)
}

console.log('━━ Scene 3 · A stubborn model, stopped as a hard error')
{
  const model = scriptedModel([{ calls: [{ name: 'read_file', args: { path: 'src/mian.rs' } }] }])
  const shallot = shallotFunctionTools([readFileSpec], { middleware: defaultMiddleware() })
  try {
    await run(agentWith(model, shallot.tools), 'What does src/main.rs do?', { signal: shallot.signal, maxTurns: 20 })
    console.log('completed (unexpected)')
  } catch (error) {
    console.log(LoopError.is(error) ? `run() rejected: LoopError ${error.kind}: ${hide(error.message)}` : `failed: ${String(error)}`)
    console.log(`after ${model.requests.length} model turns`)
  }
}

rmSync(root, { recursive: true, force: true })
