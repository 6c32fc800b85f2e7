/**
 * The Vercel AI SDK (`ai` 6, `@ai-sdk/openai` Chat Completions), configured as its docs show for a
 * multi-step tool loop: `generateText` with `tools` and `stopWhen: stepCountIs(n)`, everything else
 * at its default (`maxRetries: 2` for model calls, no tool retry, no tool deadline).
 * https://ai-sdk.dev/docs/ai-sdk-core/tools-and-tool-calling#multi-step-calls-using-stopwhen
 *
 * With shallot in front: `shallotTools(tools, { middleware: defaultMiddleware(), effects })`, its
 * `abortSignal`, `stopOnHardError` and `repairToolCall`, as packages/ai-sdk/README.md "Tools only" shows:
 * the tools only; the model calls stay the SDK's, with its two retries.
 *
 * "used fully" is shallot-full's setup under the AI SDK (packages/ai-sdk/README.md "Usage"): the model behind
 * `shallotModel()` (`defaultModelMiddleware()` from `shallot`: breaker, retry with Retry-After as a floor, the
 * classifier, a deadline), each write `idempotent` with the call's key forwarded upstream (`idempotencyKeyOf`) and a
 * `reconcile` that asks the service's lookup endpoint, and `fallback()` answering the forecast from its mirror.
 */
import { createOpenAI } from '@ai-sdk/openai'
import { idempotencyKeyOf, shallotModel, shallotTools, toShallotTools } from '@shallot/ai-sdk'
import { generateText, stepCountIs, type Tool, tool } from 'ai'
import { createStack, defaultMiddleware, fallback, type Middleware, type Stack } from 'shallot'
import { type BenchTool, MIRRORS } from '../tasks.js'
import type { Contender, EpisodeSetup, RunEnd } from './contender.js'
import { reconcilerOf } from './shallot-agent.js'

const MAX_STEPS = 20

/** The bench's tools as AI SDK tools; `forwardKey`: the call's idempotency key goes upstream, as the README shows. */
function aiTools(tools: readonly BenchTool[], forwardKey = false): Record<string, Tool> {
  return Object.fromEntries(
    tools.map((bench) => [
      bench.name,
      tool({
        description: bench.description,
        inputSchema: bench.input,
        execute: (args: Record<string, unknown>, options) =>
          bench.execute(args, { signal: options.abortSignal, idempotencyKey: forwardKey ? idempotencyKeyOf(options) : undefined }),
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

/** shallot-full's stack for AI SDK tools: writes idempotent with their reconcile, the forecast's mirror inside retry. */
function fullStack(setup: EpisodeSetup, tools: Record<string, Tool>): Stack {
  const effects = Object.fromEntries(
    setup.tools.map((bench) => [bench.name, bench.effect === 'write' ? ('idempotent' as const) : bench.effect]),
  )
  const reconcile = Object.fromEntries(
    setup.tools.flatMap((bench) => {
      const found = reconcilerOf(bench).reconcile
      return found === undefined ? [] : [[bench.name, found]]
    }),
  )
  const names = new Set(setup.tools.map((bench) => bench.name))
  const sources = Object.fromEntries(
    Object.entries(MIRRORS)
      .filter(([primary, mirror]) => names.has(primary) && names.has(mirror))
      .map(([primary, mirror]) => [primary, [{ from: 'tool' as const, tool: mirror }]]),
  )
  let built: Stack | undefined
  const answerFromMirror = fallback({ tools: sources, dispatch: (call, options) => (built as Stack).dispatch(call, options) })
  const layers = [...defaultMiddleware()] as Middleware[]
  // panic-catcher, stuck-loop, idempotency, circuit-breaker, retry | fallback | error-classifier, timeout
  layers.splice(5, 0, answerFromMirror.wrapToolCall)
  built = createStack({ tools: toShallotTools(tools, { effects, reconcile }), middleware: layers })
  return built
}

async function aiSdkWithShallotFully(setup: EpisodeSetup): Promise<RunEnd> {
  const openai = createOpenAI({ baseURL: `${setup.url}/v1`, apiKey: 'sk-bench' })
  const tools = aiTools(setup.tools, true)
  const shallot = shallotTools(tools, { stack: fullStack(setup, tools), signal: setup.signal, task: setup.task.prompt })
  try {
    const { text } = await generateText({
      model: shallotModel(openai.chat(setup.model)),
      prompt: setup.task.prompt,
      tools: shallot.tools,
      abortSignal: shallot.abortSignal,
      stopWhen: [stepCountIs(MAX_STEPS), shallot.stopOnHardError],
      experimental_repairToolCall: shallot.repairToolCall,
    })
    return { kind: 'answered', text }
  } catch (error) {
    // A stop is handed over as the report, as createAgent's outcome is.
    const report = shallot.report(error)
    if (report === undefined) throw error
    return { kind: 'stopped', reason: report.text.split('\n')[0] ?? 'stopped' }
  }
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
  follows: 'packages/ai-sdk/README.md#tools-only',
  run: aiSdkWithShallot,
}

export const aiSdkShallotFull: Contender = {
  id: 'ai-sdk+shallot-full',
  label: 'AI SDK + shallot, used fully',
  follows: 'packages/ai-sdk/README.md#usage (shallotModel, keys forwarded, reconcile), packages/fallback/README.md',
  run: aiSdkWithShallotFully,
}
