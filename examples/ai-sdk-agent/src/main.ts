// Four moments of an AI SDK agent whose tools sit behind shallot's default stack, on the SDK's own
// mock model (no network, no API key): a mistyped path healed by a soft error, a sick service whose
// circuit opens, a stubborn model stopped by stuck-loop as a hard error, and that stop in streamText.

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { isSoftFailure, shallotTools } from '@shallot/ai-sdk'
import { createUIMessageStream, generateText, type StepResult, stepCountIs, streamText, type ToolSet, tool } from 'ai'
import { consecutive, defaultMiddleware, LoopError } from 'shallot'
import { z } from 'zod'
import { lastOutputs, scriptedModel } from './scripted-model.js'

const root = mkdtempSync(join(tmpdir(), 'shallot-ai-sdk-'))
mkdirSync(join(root, 'src'))
writeFileSync(join(root, 'src/main.rs'), 'fn main() { println!("hello from the AI SDK"); }\n')

const readFileTool = tool({
  description: 'Read a UTF-8 text file from the project',
  inputSchema: z.object({ path: z.string().min(1) }),
  // A plain fs call: the stack's error classifier turns its ENOENT into a soft not_found.
  execute: ({ path }, { abortSignal }) => readFile(join(root, path), { encoding: 'utf8', ...(abortSignal ? { signal: abortSignal } : {}) }),
})

/** Whether a tool result the model reads is an error: the stack's JSON with an `error` code, whatever the output's type. */
function readsAsError(value: unknown): boolean {
  try {
    return typeof JSON.parse(String(value)).error === 'string'
  } catch {
    return false
  }
}

const hide = (text: string) => text.replaceAll(root, '<project>').trim()

function printStep<T extends ToolSet>(step: StepResult<T>): void {
  for (const call of step.toolCalls) console.log(`model  → ${call.toolName} ${JSON.stringify(call.input)}`)
  for (const part of step.content) {
    if (part.type === 'tool-result') {
      const output: unknown = part.output
      console.log(isSoftFailure(output) ? `tool   ✗ ${hide(output.content)}` : `tool   ✓ ${hide(String(output))}`)
    } else if (part.type === 'tool-error') {
      console.log(`tool   ■ hard stop: ${hide(String(part.error))}`)
    } else if (part.type === 'text') {
      console.log(`model  “${part.text}”`)
    }
  }
}

console.log('━━ Scene 1 · A mistyped path, healed by a soft error')
{
  const model = scriptedModel([
    { call: { name: 'read_file', input: { path: 'src/mian.rs' } } },
    (prompt) =>
      readsAsError(lastOutputs(prompt)[0]?.value) ? { call: { name: 'read_file', input: { path: 'src/main.rs' } } } : { text: 'read it' },
    (prompt) => ({ text: `main.rs prints a greeting: ${String(lastOutputs(prompt)[0]?.value).trim()}` }),
  ])
  const shallot = shallotTools({ read_file: readFileTool }, { middleware: defaultMiddleware(), effects: { read_file: 'read' } })
  const result = await generateText({
    model,
    prompt: 'What does src/main.rs do?',
    tools: shallot.tools,
    abortSignal: shallot.abortSignal,
    stopWhen: [stepCountIs(10), shallot.stopOnHardError],
    onStepFinish: printStep,
  })
  console.log(`completed in ${result.steps.length} steps`)
}

console.log('━━ Scene 2 · A sick service: two failures open its circuit')
{
  let executions = 0
  const deployStatus = tool({
    description: 'Status of the deploy service',
    inputSchema: z.object({ env: z.enum(['prod', 'staging', 'dev']) }),
    execute: async (): Promise<string> => {
      executions++
      throw Object.assign(new Error('Service Unavailable'), { status: 503 })
    },
  })
  const ask = (env: string) => ({ call: { name: 'deploy_status', input: { env } } })
  const model = scriptedModel([
    ask('prod'),
    ask('staging'),
    ask('dev'),
    { text: 'The deploy service is down; I will report that instead of waiting.' },
  ])
  // No retry here, so each model step is one attempt and the story stays short.
  const middleware = defaultMiddleware({ retry: false, circuitBreaker: { policy: consecutive({ threshold: 2 }) } })
  const shallot = shallotTools({ deploy_status: deployStatus }, { middleware, effects: { deploy_status: 'read' } })
  await generateText({
    model,
    prompt: 'Is the deploy healthy?',
    tools: shallot.tools,
    abortSignal: shallot.abortSignal,
    stopWhen: [stepCountIs(10), shallot.stopOnHardError],
    onStepFinish: printStep,
  })
  console.log(`deploy_status ran ${executions} times for 3 calls`)
}

console.log('━━ Scene 3 · A stubborn model, stopped as a hard error')
{
  const model = scriptedModel([{ call: { name: 'read_file', input: { path: 'src/mian.rs' } } }])
  const shallot = shallotTools({ read_file: readFileTool }, { middleware: defaultMiddleware(), effects: { read_file: 'read' } })
  try {
    await generateText({
      model,
      prompt: 'What does src/main.rs do?',
      tools: shallot.tools,
      abortSignal: shallot.abortSignal,
      stopWhen: [stepCountIs(20), shallot.stopOnHardError],
      onStepFinish: printStep,
    })
    console.log('completed (unexpected)')
  } catch (error) {
    console.log(LoopError.is(error) ? `generateText rejected: LoopError ${error.kind}: ${hide(error.message)}` : `failed: ${String(error)}`)
  }
}

console.log('━━ Scene 4 · The same stop in streamText, as a chat UI receives it')
{
  const model = scriptedModel([{ call: { name: 'read_file', input: { path: 'src/mian.rs' } } }])
  const shallot = shallotTools({ read_file: readFileTool }, { middleware: defaultMiddleware(), effects: { read_file: 'read' } })
  const message = (error: unknown) => (LoopError.is(error) ? `LoopError ${error.kind}` : 'error')
  const stream = createUIMessageStream({
    execute({ writer }) {
      const result = streamText({
        model,
        prompt: 'What does src/main.rs do?',
        tools: shallot.tools,
        abortSignal: shallot.abortSignal,
        experimental_transform: shallot.streamTransform,
        experimental_repairToolCall: shallot.repairToolCall,
        stopWhen: [stepCountIs(20), shallot.stopOnHardError],
        onError: () => {}, // the UI stream reports it below
      })
      writer.merge(result.toUIMessageStream({ onError: message }))
    },
    onError: message,
  })
  const kinds = new Set<string>()
  for await (const chunk of stream) {
    if (chunk.type === 'error') kinds.add(`error: ${chunk.errorText}`)
    if (chunk.type === 'abort') kinds.add('abort')
  }
  console.log(`UI stream ended with: ${[...kinds].join(', ')}`)
}

rmSync(root, { recursive: true, force: true })
