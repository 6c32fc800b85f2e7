import { getEventListeners } from 'node:events'
import { createAgent } from '@shallot/agent'
import { defineTool, ToolError } from '@shallot/core'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { retry } from './index.js'

describe('retry in an agent run its caller can cancel', () => {
  it('wakes from a long backoff when the caller aborts, ends the run as cancelled, and leaves no listener on the caller’s signal', async () => {
    const caller = new AbortController()
    let calls = 0
    const flaky = defineTool({
      name: 'flaky',
      description: 'Fails once, then the caller gives up',
      input: z.object({}),
      effect: 'read',
      execute: () => {
        calls++
        // After the failure, while retry waits its 60 s: the caller gives up.
        setImmediate(() => caller.abort('enough'))
        throw new ToolError('unavailable', 'down for now', { category: 'transient', retryable: true })
      },
    })
    const agent = createAgent({
      model: {
        generate: async ({ messages }) =>
          messages.some((m) => m.role === 'tool') ? { text: 'done' } : { toolCalls: [{ id: 'c1', name: 'flaky', args: {} }] },
      },
      tools: [flaky],
      middleware: [retry({ backoff: 'constant', baseMs: 60_000, retryBudget: false })],
    })
    const outcome = await agent.run({ input: 'go', signal: caller.signal })
    expect(outcome.status).toBe('stopped')
    expect(outcome.status === 'stopped' && outcome.error.kind).toBe('cancelled')
    expect(calls).toBe(1)
    expect(getEventListeners(caller.signal, 'abort')).toHaveLength(0)
  })
})
