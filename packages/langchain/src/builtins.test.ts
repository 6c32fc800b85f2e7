import { readFileSync } from 'node:fs'
import { AIMessage } from '@langchain/core/messages'
import { fakeModel } from '@langchain/core/testing'
import { ToolError } from '@shallot/core'
import { retry } from '@shallot/retry'
import { manualClock } from '@shallot/testing'
import { createAgent, tool, toolRetryMiddleware } from 'langchain'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { loopErrorOf, shallotMiddleware } from './index.js'
import { agentWithBuiltins } from './readme-builtins-example.js'
import { toolMessages } from './scripted-chat-model.test-helper.js'

/** A search that fails with a transient error on its first `failures` runs. */
function flakySearch(failures: number, thrown: () => unknown = () => new ToolError('upstream_error', 'search answered HTTP 503')) {
  let runs = 0
  const search = tool(
    async ({ q }) => {
      runs++
      if (runs <= failures) throw thrown()
      return `results for ${q}`
    },
    { name: 'search', description: 'Search', schema: z.object({ q: z.string() }) },
  )
  return { search, runs: () => runs }
}
const searchOnce = () =>
  fakeModel()
    .respondWithTools([{ name: 'search', args: { q: 'shallot' } }])
    .respond(new AIMessage('done'))
const ask = { messages: [{ role: 'user', content: 'search shallot' }] }

describe('README: LangChain built-ins next to shallotMiddleware', () => {
  it('shows the type-checked example verbatim', () => {
    const example = readFileSync(new URL('./readme-builtins-example.ts', import.meta.url), 'utf8').replace(
      "from './index.js'",
      "from '@shallot/langchain'",
    )
    expect(readFileSync(new URL('../README.md', import.meta.url), 'utf8')).toContain(example)
  })

  it('retries once, in shallot: two transient failures cost three runs', async () => {
    const { search, runs } = flakySearch(2)
    const clock = manualClock()
    const invocation = agentWithBuiltins(searchOnce(), [search], clock).invoke(ask)
    await clock.runAll()
    const { messages } = await invocation
    expect(runs()).toBe(3)
    expect(toolMessages(messages).map((m) => m.content)).toEqual(['results for shallot'])
  })

  it('keeps a hard stop hard: toolErrorMiddleware outside shallot lets the LoopError through', async () => {
    const { search, runs } = flakySearch(5, () => new Error('segfault in the search client'))
    const invocation = agentWithBuiltins(searchOnce(), [search], manualClock()).invoke(ask)
    await expect(invocation).rejects.toSatisfy((error: unknown) => loopErrorOf(error)?.kind === 'tool_crashed')
    expect(runs()).toBe(1)
  })
})

describe('toolRetryMiddleware with shallot', () => {
  const agentWith = (
    order: 'outside' | 'inside',
    search: ReturnType<typeof flakySearch>['search'],
    clock: ReturnType<typeof manualClock>,
  ) => {
    const lcRetry = toolRetryMiddleware({ maxRetries: 2, initialDelayMs: 0, jitter: false })
    const shallot = shallotMiddleware({ middleware: [retry({ maxAttempts: 3 })], effects: { search: 'read' }, clock })
    return createAgent({
      model: searchOnce(),
      tools: [search],
      middleware: order === 'outside' ? [lcRetry, shallot] : [shallot, lcRetry],
    } as never) as ReturnType<typeof createAgent>
  }

  it('outside shallot it never fires: shallot answers with a ToolMessage, not a throw', async () => {
    const { search, runs } = flakySearch(10)
    const clock = manualClock()
    const invocation = agentWith('outside', search, clock).invoke(ask)
    await clock.runAll()
    const { messages } = await invocation
    expect(runs()).toBe(3)
    expect(JSON.parse(String(toolMessages(messages)[0]?.content)).error).toBe('upstream_error')
  })

  it("inside shallot it takes over: LangChain's 3 attempts, then shallot reads a non-retryable tool_error", async () => {
    const { search, runs } = flakySearch(10)
    const clock = manualClock()
    const invocation = agentWith('inside', search, clock).invoke(ask)
    await clock.runAll()
    const { messages } = await invocation
    expect(runs()).toBe(3)
    expect(JSON.parse(String(toolMessages(messages)[0]?.content)).error).toBe('tool_error')
  })
})
