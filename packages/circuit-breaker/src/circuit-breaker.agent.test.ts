import { createAgent } from '@shallot/agent'
import { defineTool, ToolError } from '@shallot/core'
import { manualClock, scriptedModel } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { circuitBreaker, consecutive } from './index.js'

describe('circuitBreaker in an agent run (the quickstart scene)', () => {
  it('opens after two timeouts, tells the model the tool is unavailable, and the model routes to another tool', async () => {
    let webCalls = 0
    const searchWeb = defineTool({
      name: 'search_web',
      description: 'Search the web',
      input: z.object({ q: z.string() }),
      effect: 'read',
      execute: () => {
        webCalls++
        if (webCalls <= 2) throw new ToolError('timeout', "Tool 'search_web' timed out after 5s")
        return 'web hits'
      },
    })
    const searchDocs = defineTool({
      name: 'search_docs',
      description: 'Search the internal docs',
      input: z.object({ q: z.string() }),
      effect: 'read',
      execute: ({ q }) => `docs: refunds take 5 days (${q})`,
    })
    const web = { name: 'search_web', args: { q: 'refund policy' } }
    const model = scriptedModel([
      { toolCalls: [web] },
      { toolCalls: [web] },
      // A stubborn model asks once more; the breaker answers for the tool.
      { toolCalls: [web] },
      ({ lastResults, tools }) => {
        const unavailable = tools.find((t) => t.name === 'search_web')?.note?.startsWith('UNAVAILABLE')
        return lastResults[0]?.ok === false && unavailable
          ? { toolCalls: [{ name: 'search_docs', args: { q: 'refund policy' } }] }
          : { toolCalls: [web] }
      },
      ({ lastResults }) => ({ text: lastResults[0]?.content ?? '' }),
    ])
    const agent = createAgent({
      model,
      tools: [searchWeb, searchDocs],
      middleware: [circuitBreaker({ policy: consecutive({ threshold: 2 }) })],
      clock: manualClock(),
    })

    const outcome = await agent.run({ input: 'How long do refunds take?' })

    expect(outcome).toMatchObject({ status: 'completed', output: 'docs: refunds take 5 days (refund policy)', turns: 5 })
    expect(webCalls).toBe(2)
    const results = outcome.transcript.filter((m) => m.role === 'tool')
    expect(results.map((m) => (m.ok ? 'ok' : JSON.parse(m.content).error))).toEqual(['timeout', 'timeout', 'circuit_open', 'ok'])
    expect(JSON.parse(results[2]?.content ?? '{}')).toMatchObject({
      message:
        "tool 'search_web' temporarily unavailable: circuit breaker open after 2 failures. Use a different approach or report you cannot proceed.",
      retryAfterMs: 30_000,
    })
    const descriptions = model.requests.map((r) => r.tools.find((t) => t.name === 'search_web')?.description)
    expect(descriptions).toEqual([
      'Search the web',
      'Search the web',
      'UNAVAILABLE: circuit open, retry in 30s Search the web',
      'UNAVAILABLE: circuit open, retry in 30s Search the web',
      'UNAVAILABLE: circuit open, retry in 30s Search the web',
    ])
  })
})
