// The README's spare-model sample, run: a fallback layer outermost in front of the default model stack, whose
// breaker keeps one circuit per model.
import { readFileSync } from 'node:fs'
import { afterEach, expect, it, vi } from 'vitest'
import { z } from 'zod'
// readme:start
import { createAgent, defaultModelMiddleware, defineTool, fallback, type ModelAdapter, memoryCheckpoints } from './index.js'

const writeFile = defineTool({
  name: 'write_file',
  description: 'Write a file of the project',
  input: z.object({ path: z.string(), content: z.string() }),
  effect: 'write',
  execute: async ({ path }) => `wrote ${path}`,
})

/** gpt answers, claude when gpt keeps failing; a run stops past 1,000,000 tokens or $2. */
export function releaseAgent(gpt: ModelAdapter, claude: ModelAdapter) {
  return createAgent({
    model: { name: 'gpt-4o-mini', generate: (request) => gpt.generate(request) },
    modelMiddleware: [
      fallback({ models: [{ name: 'claude-sonnet-4-5', generate: (request) => claude.generate(request) }] }),
      ...defaultModelMiddleware(),
    ],
    system: 'You write release notes. Be brief.',
    tools: [writeFile],
    limits: { maxTokens: 1_000_000, maxCostUsd: 2 },
    prices: {
      'gpt-4o-mini': { inputPerMTokUsd: 0.15, outputPerMTokUsd: 0.6 },
      'claude-sonnet-4-5': { inputPerMTokUsd: 3, outputPerMTokUsd: 15 },
    },
    checkpoints: memoryCheckpoints(),
    onEvent: (event) => console.log(event.type, event.type === 'model.fallback' ? event.reason : ''),
  })
}
// readme:end

afterEach(() => {
  vi.useRealTimers()
})

const source = readFileSync(new URL(import.meta.url), 'utf8')
const sample = (source.split('// readme:start\n')[1] ?? '').split('// readme:end')[0] ?? ''

it('the README shows the model-policy sample verbatim (importing the published name)', () => {
  expect(sample).toContain('export function releaseAgent')
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8')
  expect(readme).toContain(sample.replace("from './index.js'", "from 'shallot'"))
})

const overloaded = Object.assign(new Error('overloaded'), { status: 529 })
const seen: string[] = []
const gpt: ModelAdapter = {
  async generate({ system }) {
    seen.push(`gpt: ${system}`)
    throw overloaded
  },
}

/** Drives the retries' real timers on fake time until `run` settles. */
async function settle<T>(run: Promise<T>): Promise<T> {
  let done = false
  void run.finally(() => {
    done = true
  })
  while (!done) await vi.advanceTimersByTimeAsync(1000)
  return run
}

it('runs: a failing gpt falls back to claude, which the system prompt reaches too, and the run completes', async () => {
  vi.useFakeTimers()
  const log = vi.spyOn(console, 'log').mockImplementation(() => {})
  let turn = 0
  const claude: ModelAdapter = {
    async generate({ system }) {
      seen.push(`claude: ${system}`)
      turn++
      return turn === 1
        ? {
            toolCalls: [{ id: 'c1', name: 'write_file', args: { path: 'NOTES.md', content: '- faster' } }],
            usage: { inputTokens: 900, outputTokens: 40 },
          }
        : { text: 'NOTES.md written', usage: { inputTokens: 1000, outputTokens: 5 } }
    },
  }
  const outcome = await settle(releaseAgent(gpt, claude).run({ input: 'write the release notes' }))
  expect(outcome).toMatchObject({ status: 'completed', output: 'NOTES.md written', usage: { inputTokens: 1900, outputTokens: 45 } })
  expect(seen.slice(0, 4)).toEqual([
    'gpt: You write release notes. Be brief.',
    'gpt: You write release notes. Be brief.',
    'gpt: You write release notes. Be brief.',
    'claude: You write release notes. Be brief.',
  ])
  expect(log).toHaveBeenCalledWith('model.fallback', 'gpt-4o-mini: 529 the provider is overloaded; circuit open')
})

it('runs: the run stops as budget_exhausted the moment its cost passes $2, with a report and the resume call', async () => {
  vi.useFakeTimers()
  vi.spyOn(console, 'log').mockImplementation(() => {})
  const claude: ModelAdapter = {
    async generate() {
      // $2.10 of input at $3 per million tokens.
      return {
        toolCalls: [{ id: 'c1', name: 'write_file', args: { path: 'NOTES.md', content: '-' } }],
        usage: { inputTokens: 700_000, outputTokens: 0 },
      }
    },
  }
  const outcome = await settle(releaseAgent(gpt, claude).run({ input: 'write the release notes', runId: 'notes' }))
  expect(outcome.status).toBe('stopped')
  if (outcome.status !== 'stopped') return
  expect(outcome.error.message).toBe('cost budget exhausted: $2.10 spent, limits.maxCostUsd is $2.00')
  expect(outcome.report.nextSteps).toContain(
    "raise limits.maxCostUsd (the run keeps what it spent), otherwise narrow the task; then resume it with agent.resume('notes')",
  )
})
