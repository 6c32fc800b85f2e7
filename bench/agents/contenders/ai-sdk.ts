/**
 * The Vercel AI SDK (`ai` 6, `@ai-sdk/openai` Chat Completions), configured as its docs show for a
 * multi-step tool loop: `generateText` with `tools` and `stopWhen: stepCountIs(n)`, everything else
 * at its default (`maxRetries: 2` for model calls, no tool retry, no tool deadline).
 * https://ai-sdk.dev/docs/ai-sdk-core/tools-and-tool-calling#multi-step-calls-using-stopwhen
 *
 * With shallot in front: `shallotTools(tools, { middleware: defaultMiddleware(), effects })`, its
 * `abortSignal`, `stopOnHardError` and `repairToolCall`, as packages/ai-sdk/README.md shows.
 */
import { createOpenAI } from '@ai-sdk/openai'
import { shallotTools } from '@shallot/ai-sdk'
import { generateText, stepCountIs, type Tool, tool } from 'ai'
import { defaultMiddleware } from 'shallot'
import type { BenchTool } from '../tasks.js'
import type { Contender, EpisodeSetup, RunEnd } from './contender.js'

const MAX_STEPS = 20

function aiTools(tools: readonly BenchTool[]): Record<string, Tool> {
  return Object.fromEntries(
    tools.map((bench) => [
      bench.name,
      tool({
        description: bench.description,
        inputSchema: bench.input,
        execute: (args: Record<string, unknown>, { abortSignal }) => bench.execute(args, { signal: abortSignal }),
      }),
    ]),
  )
}

async function aiSdkAlone(setup: EpisodeSetup): Promise<RunEnd> {
  const openai = createOpenAI({ baseURL: `${setup.url}/v1`, apiKey: 'sk-bench' })
  const { text } = await generateText({
    model: openai.chat(setup.model),
    prompt: setup.task.prompt,
    tools: aiTools(setup.tools),
    stopWhen: stepCountIs(MAX_STEPS),
    abortSignal: setup.signal,
  })
  return { kind: 'answered', text }
}

async function aiSdkWithShallot(setup: EpisodeSetup): Promise<RunEnd> {
  const openai = createOpenAI({ baseURL: `${setup.url}/v1`, apiKey: 'sk-bench' })
  const effects = Object.fromEntries(setup.tools.map((bench) => [bench.name, bench.effect]))
  const shallot = shallotTools(aiTools(setup.tools), { middleware: defaultMiddleware(), effects, signal: setup.signal })
  const { text } = await generateText({
    model: openai.chat(setup.model),
    prompt: setup.task.prompt,
    tools: shallot.tools,
    abortSignal: shallot.abortSignal,
    stopWhen: [stepCountIs(MAX_STEPS), shallot.stopOnHardError],
    experimental_repairToolCall: shallot.repairToolCall,
  })
  return { kind: 'answered', text }
}

export const aiSdk: Contender = {
  id: 'ai-sdk',
  label: 'AI SDK',
  follows: 'https://ai-sdk.dev/docs/ai-sdk-core/tools-and-tool-calling#multi-step-calls-using-stopwhen',
  run: aiSdkAlone,
}

export const aiSdkShallot: Contender = {
  id: 'ai-sdk+shallot',
  label: 'AI SDK + shallot',
  follows: 'packages/ai-sdk/README.md#usage',
  run: aiSdkWithShallot,
}
