/**
 * shallot's own `createAgent`, on the AI SDK's OpenAI provider through `aiSdkModel`, with
 * `defaultMiddleware()` (packages/shallot/README.md "Usage"; packages/ai-sdk/README.md "aiSdkModel").
 *
 * "used fully" adds what the docs recommend for writes and for a tool with a mirror: each write
 * forwards `idempotencyKey` upstream and is declared `idempotent` (packages/idempotency/README.md,
 * DESIGN.md "ToolDefinition") with a `reconcile` that asks the service's lookup endpoint whether a
 * write under the call's key landed (the same README, "Upstream keys and reconciliation"), and
 * `fallback()` answers the primary forecast from its mirror (packages/fallback/README.md), placed
 * outside idempotency as that page says.
 *
 * "+reconcile" is the plain row with only that `reconcile` added to each write: still `effect:
 * 'write'`, and the key is not forwarded upstream, so the lookup asks under a key the service never saw.
 */
import { createOpenAI } from '@ai-sdk/openai'
import { aiSdkModel } from '@shallot/ai-sdk'
import { createAgent, createStack, defaultMiddleware, defineTool, fallback, type Middleware, type Stack } from 'shallot'
import { type BenchTool, MIRRORS } from '../tasks.js'
import type { Contender, EpisodeSetup, RunEnd } from './contender.js'

/**
 * Asks the write's service, through its lookup endpoint, whether a write under this key landed
 * (packages/idempotency/README.md "Upstream keys and reconciliation").
 */
export function reconcilerOf(tool: BenchTool) {
  const lookup = tool.lookup
  if (lookup === undefined) return {}
  return {
    reconcile: async (_args: unknown, { idempotencyKey, signal }: { idempotencyKey?: string | undefined; signal: AbortSignal }) => {
      const found = await lookup({ signal, idempotencyKey })
      return found === undefined ? ({ status: 'not_applied' } as const) : ({ status: 'applied', result: found } as const)
    },
  }
}

/** `plain`: the README's setup; `reconcile`: plus each write's `reconcile`; `full`: the "used fully" row. */
type Use = 'plain' | 'reconcile' | 'full'

function shallotToolsOf(setup: EpisodeSetup, use: Use) {
  const full = use === 'full'
  return setup.tools.map((tool) =>
    defineTool({
      name: tool.name,
      description: tool.description,
      input: tool.input,
      effect: full && tool.effect === 'write' ? 'idempotent' : tool.effect,
      execute: (args, { signal, idempotencyKey }) =>
        tool.execute(args as Record<string, unknown>, { signal, idempotencyKey: full ? idempotencyKey : undefined }),
      ...(use === 'plain' ? {} : reconcilerOf(tool)),
    }),
  )
}

async function runAgent(setup: EpisodeSetup, use: Use): Promise<RunEnd> {
  const openai = createOpenAI({ baseURL: `${setup.url}/v1`, apiKey: 'sk-bench' })
  const tools = shallotToolsOf(setup, use)
  let stack: Stack | undefined
  if (use === 'full') {
    const layers = [...defaultMiddleware()] as Middleware[]
    const names = new Set(tools.map((tool) => tool.name))
    const sources = Object.fromEntries(
      Object.entries(MIRRORS)
        .filter(([primary, mirror]) => names.has(primary) && names.has(mirror))
        .map(([primary, mirror]) => [primary, [{ from: 'tool' as const, tool: mirror }]]),
    )
    let built: Stack | undefined
    const answerFromMirror = fallback({ tools: sources, dispatch: (call, options) => (built as Stack).dispatch(call, options) })
    layers.splice(2, 0, answerFromMirror)
    built = createStack({ tools, middleware: layers })
    stack = built
  }
  const agent = createAgent({
    model: aiSdkModel(openai.chat(setup.model)),
    ...(stack === undefined ? { tools, middleware: defaultMiddleware() } : { stack }),
  })
  const outcome = await agent.run({ input: setup.task.prompt, signal: setup.signal })
  if (outcome.status === 'completed') return { kind: 'answered', text: String(outcome.output) }
  if (outcome.status === 'stopped') return { kind: 'stopped', reason: outcome.report.text.split('\n')[0] ?? 'stopped' }
  return { kind: 'stopped', reason: 'parked' }
}

export const shallotAgent: Contender = {
  id: 'shallot',
  label: 'shallot createAgent',
  follows: 'packages/shallot/README.md#usage, packages/ai-sdk/README.md#aisdkmodel-shallots-own-agent-on-any-ai-sdk-model',
  run: (setup) => runAgent(setup, 'plain'),
}

export const shallotReconcile: Contender = {
  id: 'shallot+reconcile',
  label: 'shallot createAgent, writes with reconcile',
  follows: 'packages/shallot/README.md#usage, packages/idempotency/README.md (reconcile through the lookup; effect write, no key upstream)',
  run: (setup) => runAgent(setup, 'reconcile'),
}

export const shallotFull: Contender = {
  id: 'shallot-full',
  label: 'shallot, used fully',
  follows: 'packages/idempotency/README.md (forward idempotencyKey, effect idempotent), packages/fallback/README.md',
  run: (setup) => runAgent(setup, 'full'),
}
