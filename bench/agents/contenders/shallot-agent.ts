/**
 * shallot's own `createAgent`, on the AI SDK's OpenAI provider through `aiSdkModel`, with
 * `defaultMiddleware()` and `modelMiddleware: defaultModelMiddleware()` (packages/shallot/README.md "Usage";
 * packages/ai-sdk/README.md "aiSdkModel").
 *
 * "used fully" adds what the docs recommend for writes and for a tool with a mirror: each write
 * forwards `idempotencyKey` upstream and is declared `idempotent` (packages/idempotency/README.md,
 * core's `ToolDefinition`) with a `reconcile` that asks the service's lookup endpoint whether a
 * write under the call's key landed (the same README, "Upstream keys and reconciliation"), and
 * `fallback()` answers the primary forecast from its mirror (packages/fallback/README.md), placed
 * inside retry, as that page says for a read whose mirror is as good as the primary: the first failure
 * is answered from the mirror at once, instead of after the primary's retries and their backoff.
 *
 * "+reconcile" is the plain row with a `reconcile` added to each write: still `effect: 'write'`, and
 * no key is forwarded upstream, so the reconciler finds the write by what it carried, as a service
 * without keys allows: its list endpoint, searched for a write with these arguments created since this
 * process last sent them (`searchReconcilerOf`).
 */
import { createOpenAI } from '@ai-sdk/openai'
import { aiSdkModel } from '@shallot/ai-sdk'
import {
  createAgent,
  createStack,
  defaultMiddleware,
  defaultModelMiddleware,
  defineTool,
  fallback,
  type Middleware,
  memoryCheckpoints,
  type ParkingOutcome,
  type Stack,
} from 'shallot'
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

/**
 * Finds a write sent without a key by what it carried: the service's list endpoint, for a write of
 * these arguments created at or after this process last sent them (the attempt whose outcome is
 * unknown). Arguments never sent from here answer `unknown`: nothing says when to search from.
 * `execute` must go through the returned `send` so the send times are known.
 */
export function searchReconcilerOf(tool: BenchTool) {
  const search = tool.search
  const sentAt = new Map<string, number>()
  const send = (args: Record<string, unknown>, options: { signal: AbortSignal }) => {
    sentAt.set(JSON.stringify(args), Date.now())
    return tool.execute(args, { signal: options.signal })
  }
  if (search === undefined) return { send, reconcilers: {} }
  const reconcile = async (args: unknown, { signal }: { signal: AbortSignal }) => {
    const since = sentAt.get(JSON.stringify(args))
    if (since === undefined) return { status: 'unknown', hint: `${tool.name} was not sent with these arguments from here` } as const
    const found = await search(args as Record<string, unknown>, since, { signal })
    return found === undefined ? ({ status: 'not_applied' } as const) : ({ status: 'applied', result: found } as const)
  }
  return { send, reconcilers: { reconcile } }
}

/** `plain`: the README's setup; `reconcile`: plus each write's `reconcile`; `full`: the "used fully" row. */
type Use = 'plain' | 'reconcile' | 'full'

function shallotToolsOf(setup: EpisodeSetup, use: Use) {
  const full = use === 'full'
  return setup.tools.map((tool) => {
    if (use === 'reconcile' && tool.effect === 'write') {
      const { send, reconcilers } = searchReconcilerOf(tool)
      return defineTool({
        name: tool.name,
        description: tool.description,
        input: tool.input,
        effect: 'write',
        execute: (args, { signal }) => send(args as Record<string, unknown>, { signal }),
        ...reconcilers,
      })
    }
    return defineTool({
      name: tool.name,
      description: tool.description,
      input: tool.input,
      effect: full && tool.effect === 'write' ? 'idempotent' : tool.effect,
      execute: (args, { signal, idempotencyKey }) =>
        tool.execute(args as Record<string, unknown>, { signal, idempotencyKey: full ? idempotencyKey : undefined }),
      ...(full ? reconcilerOf(tool) : {}),
    })
  })
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
    // panic-catcher, stuck-loop, idempotency, circuit-breaker, retry | fallback | error-classifier, timeout
    layers.splice(5, 0, answerFromMirror.wrapToolCall)
    built = createStack({ tools, middleware: layers })
    stack = built
  }
  const agent = createAgent({
    model: aiSdkModel(openai.chat(setup.model)),
    ...(stack === undefined ? { tools, middleware: defaultMiddleware() } : { stack }),
    modelMiddleware: defaultModelMiddleware(),
    // Used fully, a wait of a minute or more parks the run (docs/topics/fleet.md) and a worker resumes it at its wake time.
    ...(use === 'full' ? { checkpoints: memoryCheckpoints(), park: { afterMs: PARK_AFTER_MS } } : {}),
  })
  // Typed for every agent here; only the used-fully one is given park, so only it can answer parked.
  let outcome = (await agent.run({ input: setup.task.prompt, signal: setup.signal })) as ParkingOutcome
  for (let resumes = 0; outcome.status === 'parked' && resumes < MAX_RESUMES; resumes++) {
    await sleepUntil(outcome.wakeAt, setup.signal)
    outcome = (await agent.resume(outcome.runId, { signal: setup.signal })) as ParkingOutcome
  }
  if (outcome.status === 'completed') return { kind: 'answered', text: String(outcome.output) }
  if (outcome.status === 'stopped') return { kind: 'stopped', reason: outcome.report.text.split('\n')[0] ?? 'stopped' }
  return { kind: 'stopped', reason: 'parked' }
}

/** The wait a parked run's worker sleeps past, for the used-fully row: a minute. */
const PARK_AFTER_MS = 60_000
/** Resumes of one episode's run before the harness calls it stuck. */
const MAX_RESUMES = 10

/** What a worker does with a parked run: sleeps (virtual time) until its wake time, or until the episode is abandoned. */
function sleepUntil(wakeAt: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason)
    const onAbort = () => {
      clearTimeout(timer)
      reject(signal.reason)
    }
    const timer = setTimeout(
      () => {
        signal.removeEventListener('abort', onAbort)
        resolve()
      },
      Math.max(0, wakeAt - Date.now()),
    )
    signal.addEventListener('abort', onAbort, { once: true })
  })
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
  follows:
    'packages/shallot/README.md#usage, packages/idempotency/README.md (reconcile by what the write carried: the list endpoint; effect write, no key upstream)',
  run: (setup) => runAgent(setup, 'reconcile'),
}

export const shallotFull: Contender = {
  id: 'shallot-full',
  label: 'shallot, used fully',
  follows: 'packages/idempotency/README.md (forward idempotencyKey, effect idempotent), packages/fallback/README.md',
  run: (setup) => runAgent(setup, 'full'),
}
