/**
 * LangChain v1 `createAgent` on `@langchain/anthropic` (the Anthropic Messages wire), with the two
 * built-in retry middlewares at their defaults, as the built-in middleware page recommends:
 * https://docs.langchain.com/oss/javascript/langchain/middleware/built-in#tool-retry and #model-retry
 * (`toolRetryMiddleware()`: 2 retries, exponential from 1 s, on every error; `modelRetryMiddleware()`).
 *
 * With shallot in front: `shallotMiddleware({ middleware: defaultMiddleware(), effects })` as the one
 * middleware, and the model's own retries off, as packages/langchain/README.md shows.
 *
 * "+shallot-full": the tools used fully as `shallot-full` uses them (contenders/used-fully.ts), each LangChain
 * tool forwarding its call's key from `getShallotCall()`, in a ready stack of `toShallotTool()` tools; the model
 * calls through shallotMiddleware's default model stack (`defaultModelMiddleware()`).
 */
import { ChatAnthropic } from '@langchain/anthropic'
import type { StructuredToolInterface } from '@langchain/core/tools'
import { getShallotCall, shallotMiddleware, toShallotTool } from '@shallot/langchain'
import { type AgentMiddleware, createAgent, modelRetryMiddleware, tool, toolRetryMiddleware } from 'langchain'
import { defaultMiddleware } from 'shallot'
import type { BenchTool } from '../tasks.js'
import type { Contender, EpisodeSetup, RunEnd } from './contender.js'
import { reconcilerOf } from './shallot-agent.js'
import { fullEffect, fullStack } from './used-fully.js'

function langchainTools(tools: readonly BenchTool[]): StructuredToolInterface[] {
  return tools.map((bench) =>
    tool(async (input: Record<string, unknown>, config) => JSON.stringify(await bench.execute(input, { signal: config?.signal })), {
      name: bench.name,
      description: bench.description,
      schema: bench.input,
    }),
  ) as unknown as StructuredToolInterface[]
}

/** The bench's tools as LangChain tools that forward the shallot call's key and signal upstream. */
function keyedTools(tools: readonly BenchTool[]): StructuredToolInterface[] {
  return tools.map((bench) =>
    tool(
      async (input: Record<string, unknown>, config) => {
        const call = getShallotCall()
        const options = { signal: call?.signal ?? config?.signal, idempotencyKey: call?.idempotencyKey }
        return JSON.stringify(await bench.execute(input, options))
      },
      { name: bench.name, description: bench.description, schema: bench.input },
    ),
  ) as unknown as StructuredToolInterface[]
}

function lastText(messages: ReadonlyArray<{ content: unknown }>): string {
  const content = messages.at(-1)?.content
  if (typeof content === 'string') return content
  if (Array.isArray(content)) return content.map((part) => (typeof part?.text === 'string' ? part.text : '')).join('')
  return ''
}

async function invoke(
  setup: EpisodeSetup,
  model: ChatAnthropic,
  middleware: AgentMiddleware[],
  tools: StructuredToolInterface[] = langchainTools(setup.tools),
): Promise<RunEnd> {
  const agent = createAgent({ model, tools, middleware })
  const { messages } = await agent.invoke(
    { messages: [{ role: 'user', content: setup.task.prompt }] },
    { signal: setup.signal, recursionLimit: 50 },
  )
  return { kind: 'answered', text: lastText(messages as Array<{ content: unknown }>) }
}

export const langchain: Contender = {
  id: 'langchain',
  label: 'LangChain createAgent',
  follows: 'https://docs.langchain.com/oss/javascript/langchain/middleware/built-in#tool-retry',
  run: (setup) =>
    invoke(setup, new ChatAnthropic({ model: setup.model, apiKey: 'sk-ant-bench', anthropicApiUrl: setup.url }), [
      toolRetryMiddleware() as AgentMiddleware,
      modelRetryMiddleware() as AgentMiddleware,
    ]),
}

export const langchainShallot: Contender = {
  id: 'langchain+shallot',
  label: 'LangChain + shallot',
  follows: 'packages/langchain/README.md#usage',
  run: (setup) => {
    const effects = Object.fromEntries(setup.tools.map((bench) => [bench.name, bench.effect]))
    return invoke(setup, new ChatAnthropic({ model: setup.model, apiKey: 'sk-ant-bench', anthropicApiUrl: setup.url, maxRetries: 0 }), [
      shallotMiddleware({ middleware: defaultMiddleware(), effects }) as unknown as AgentMiddleware,
    ])
  },
}

export const langchainShallotFull: Contender = {
  id: 'langchain+shallot-full',
  label: 'LangChain + shallot, model and tools, used fully',
  follows: 'packages/langchain/README.md#usage, packages/idempotency/README.md, packages/fallback/README.md',
  run: (setup) => {
    const tools = keyedTools(setup.tools)
    const definitions = tools.map((lcTool, i) => {
      const bench = setup.tools[i] as BenchTool
      return toShallotTool(lcTool, { effect: fullEffect(bench), ...reconcilerOf(bench) })
    })
    const model = new ChatAnthropic({ model: setup.model, apiKey: 'sk-ant-bench', anthropicApiUrl: setup.url, maxRetries: 0 })
    return invoke(setup, model, [shallotMiddleware({ stack: fullStack(definitions) }) as unknown as AgentMiddleware], tools)
  },
}
