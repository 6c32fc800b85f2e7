import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { createAgent, type RunOutcome } from '@shallot/agent'
import { createStackFromConfig, loadConfig, type ShallotConfig, watchConfig } from '@shallot/config'
import { defineTool, type ModelAdapter, ToolError } from '@shallot/core'
import { scriptedModel } from '@shallot/testing'
import { z } from 'zod'

export interface SwapSceneOptions {
  /** The folder the scene writes its shallot.yaml to. */
  dir: string
  /** The patient policy's wait between attempts. Default 150 ms. */
  waitMs?: number
  /** How long the watcher lets the file settle before reading it. Default 50 ms. */
  debounceMs?: number
  /** Where the timeline goes. Default: nowhere. */
  print?: (line: string) => void
}

export interface SwapScene {
  readonly outcome: RunOutcome
  /** Executions of the quote tool, per symbol. */
  readonly attempts: ReadonlyMap<string, number>
  readonly file: string
  readonly lines: readonly string[]
}

const configText = (waitMs: number) => `# The agent's stack. The program rewrites the retry line below while the agent runs.
stack:
  - panic-catcher
  - retry: patient
  - timeout: { ms: 2000 }
policies:
  patient: { backoff: constant, baseMs: ${waitMs}, maxAttempts: 4 }
  fail-fast: { backoff: none, maxAttempts: 1 }
`

function describePolicy(config: ShallotConfig): string {
  const retry = config.document.stack.find((entry) => typeof entry === 'object' && entry !== null && 'retry' in entry) as
    | { retry: unknown }
    | undefined
  const name = typeof retry?.retry === 'string' ? retry.retry : '(inline)'
  return `${name} ${JSON.stringify(config.layers.find((layer) => layer.name === 'retry')?.base.raw)}`
}

/**
 * An agent fetches two quotes from a flaky service (every symbol's first two attempts fail with a
 * 503). Between its turns the program rewrites shallot.yaml from `retry: patient` to
 * `retry: fail-fast`; the watcher swaps the stack's layers, and the second call gives up after one attempt.
 *
 * @example
 * const scene = await runSwapScene({ dir: mkdtempSync(join(tmpdir(), 'swap-')), print: console.log })
 */
export async function runSwapScene(options: SwapSceneOptions): Promise<SwapScene> {
  const { dir, waitMs = 150, debounceMs = 50 } = options
  const lines: string[] = []
  const print = (line: string) => {
    lines.push(line)
    options.print?.(line)
  }
  const attempts = new Map<string, number>()
  const quotes = defineTool({
    name: 'fetch_quote',
    description: 'The latest price of a stock symbol',
    input: z.object({ symbol: z.string().regex(/^[A-Z]{1,8}$/) }),
    effect: 'read',
    execute: async ({ symbol }) => {
      const attempt = (attempts.get(symbol) ?? 0) + 1
      attempts.set(symbol, attempt)
      if (attempt <= 2) {
        print(`        attempt ${attempt}: quotes service answered 503`)
        throw new ToolError('upstream_error', 'the quotes service answered 503', { retryable: true, safeToRepeat: true })
      }
      print(`        attempt ${attempt}: ${symbol} 42.17`)
      return `${symbol} 42.17`
    },
  })

  const file = join(dir, 'shallot.yaml')
  await writeFile(file, configText(waitMs))
  const stack = createStackFromConfig(await loadConfig(file), { tools: [quotes] })
  print(`shallot.yaml: retry: ${describePolicy(stack.config)}`)
  stack.on((event) => {
    if (event.type === 'retry.scheduled') print(`        retry: attempt ${event.attempt} in ${event.delayMs} ms`)
  })
  let reloaded: (config: ShallotConfig) => void = () => {}
  const swapped = new Promise<ShallotConfig>((resolve) => (reloaded = resolve))
  const stop = watchConfig(file, stack, {
    debounceMs,
    onReload: (config) => {
      print(`— watcher: shallot.yaml reloaded; retry: ${describePolicy(config)}`)
      reloaded(config)
    },
    onError: (error) => print(`— watcher: rejected the new file: ${String(error)}`),
  })

  const model = scriptedModel([
    { toolCalls: [{ name: 'fetch_quote', args: { symbol: 'ACME' } }] },
    async ({ lastResults }) => {
      print(`        tool ${lastResults[0]?.ok ? '✓' : '✗'} ${lastResults[0]?.content}`)
      print('— the program rewrites shallot.yaml: retry: patient → retry: fail-fast')
      await writeFile(file, (await readFile(file, 'utf8')).replace('retry: patient', 'retry: fail-fast'))
      await swapped
      return { toolCalls: [{ name: 'fetch_quote', args: { symbol: 'GLOBEX' } }] }
    },
    ({ lastResults }) => {
      print(`        tool ${lastResults[0]?.ok ? '✓' : '✗'} ${lastResults[0]?.content}`)
      return { text: lastResults[0]?.ok ? 'Both quotes fetched.' : 'ACME is 42.17; GLOBEX is unavailable right now.' }
    },
  ])
  // The model, announcing each turn on the timeline.
  let turn = 0
  const announcing: ModelAdapter = {
    async generate(request) {
      const response = await model.generate(request)
      turn++
      for (const call of response.toolCalls ?? []) print(`turn ${turn}  model → ${call.name} ${JSON.stringify(call.args)}`)
      if (response.text !== undefined) print(`turn ${turn}  model “${response.text}”`)
      return response
    },
  }
  const outcome = await createAgent({ model: announcing, stack, limits: { maxSteps: 20 } })
    .run({ input: 'Get the quotes for ACME and GLOBEX' })
    .finally(stop)
  print(outcome.status === 'completed' ? `completed in ${outcome.turns} turns` : `stopped: ${outcome.error.message}`)
  return { outcome, attempts, file, lines }
}
