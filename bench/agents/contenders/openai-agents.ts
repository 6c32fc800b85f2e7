/**
 * The OpenAI Agents SDK (`@openai/agents` 0.20) at its defaults: an `Agent` with function tools and
 * `run()`, on the default Responses API model through an `OpenAI` client pointed at the endpoint;
 * tracing off (it would export to OpenAI). https://openai.github.io/openai-agents-js/guides/tools/
 * and https://openai.github.io/openai-agents-js/guides/running-agents/
 *
 * With shallot in front: `shallotFunctionTools(specs, { middleware: defaultMiddleware() })` and its
 * `signal`, as packages/openai-agents/README.md shows.
 *
 * "+shallot-full": shallot in front of the model too (`shallotModelProvider()` around the same provider, the
 * default model stack), and the tools used fully as `shallot-full` uses them (contenders/used-fully.ts), with
 * the set's `callModelInputFilter` so the layers see each turn, as packages/openai-agents/README.md#usage shows.
 */
import { Agent, type ModelProvider, OpenAIProvider, Runner, setTracingDisabled, tool } from '@openai/agents'
import { shallotFunctionTools, shallotModelProvider } from '@shallot/openai-agents'
import OpenAI from 'openai'
import { defaultMiddleware, defineTool } from 'shallot'
import type { Contender, EpisodeSetup, RunEnd } from './contender.js'
import { reconcilerOf } from './shallot-agent.js'
import { fullEffect, fullStack } from './used-fully.js'

const MAX_TURNS = 20

function runnerFor(setup: EpisodeSetup, wrap: (provider: ModelProvider) => ModelProvider = (provider) => provider): Runner {
  setTracingDisabled(true)
  const openAIClient = new OpenAI({ baseURL: `${setup.url}/v1`, apiKey: 'sk-bench' })
  return new Runner({ modelProvider: wrap(new OpenAIProvider({ openAIClient })), tracingDisabled: true })
}

async function agentsAlone(setup: EpisodeSetup): Promise<RunEnd> {
  const tools = setup.tools.map((bench) =>
    tool({
      name: bench.name,
      description: bench.description,
      parameters: bench.input,
      execute: async (args) => JSON.stringify(await bench.execute(args as Record<string, unknown>, { signal: setup.signal })),
    }),
  )
  const agent = new Agent({ name: 'bench', instructions: 'Do the task with the tools.', model: setup.model, tools })
  const result = await runnerFor(setup).run(agent, setup.task.prompt, { maxTurns: MAX_TURNS, signal: setup.signal })
  return { kind: 'answered', text: String(result.finalOutput ?? '') }
}

async function agentsWithShallot(setup: EpisodeSetup): Promise<RunEnd> {
  const specs = setup.tools.map((bench) => ({
    name: bench.name,
    description: bench.description,
    parameters: bench.input,
    effect: bench.effect,
    execute: (args: Record<string, unknown>, { signal }: { signal: AbortSignal }) => bench.execute(args, { signal }),
  }))
  const shallot = shallotFunctionTools(specs, { middleware: defaultMiddleware(), signal: setup.signal })
  const agent = new Agent({ name: 'bench', instructions: 'Do the task with the tools.', model: setup.model, tools: shallot.tools })
  const result = await runnerFor(setup).run(agent, setup.task.prompt, { maxTurns: MAX_TURNS, signal: shallot.signal })
  return { kind: 'answered', text: String(result.finalOutput ?? '') }
}

async function agentsFully(setup: EpisodeSetup): Promise<RunEnd> {
  const tools = setup.tools.map((bench) =>
    defineTool({
      name: bench.name,
      description: bench.description,
      input: bench.input,
      effect: fullEffect(bench),
      execute: (args, { signal, idempotencyKey }) => bench.execute(args as Record<string, unknown>, { signal, idempotencyKey }),
      ...reconcilerOf(bench),
    }),
  )
  const shallot = shallotFunctionTools(tools, { stack: fullStack(tools), signal: setup.signal })
  const runner = runnerFor(setup, (provider) => shallotModelProvider({ provider, run: shallot.run }))
  const agent = new Agent({ name: 'bench', instructions: 'Do the task with the tools.', model: setup.model, tools: shallot.tools })
  const result = await runner.run(agent, setup.task.prompt, {
    maxTurns: MAX_TURNS,
    signal: shallot.signal,
    callModelInputFilter: shallot.callModelInputFilter,
  })
  return { kind: 'answered', text: String(result.finalOutput ?? '') }
}

export const openaiAgents: Contender = {
  id: 'openai-agents',
  label: 'OpenAI Agents SDK',
  follows: 'https://openai.github.io/openai-agents-js/guides/tools/',
  run: agentsAlone,
}

export const openaiAgentsShallot: Contender = {
  id: 'openai-agents+shallot',
  label: 'OpenAI Agents + shallot',
  follows: 'packages/openai-agents/README.md#usage',
  run: agentsWithShallot,
}

export const openaiAgentsShallotFull: Contender = {
  id: 'openai-agents+shallot-full',
  label: 'OpenAI Agents + shallot, model and tools, used fully',
  follows: 'packages/openai-agents/README.md#usage, packages/idempotency/README.md, packages/fallback/README.md',
  run: agentsFully,
}
