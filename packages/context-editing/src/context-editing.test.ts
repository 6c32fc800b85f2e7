import { createRun, LoopError, type Message, OptionsError, ToolError } from '@shallot/core'
import { describe, expect, it } from 'vitest'
import { ask, frozen, tooLong, turn } from './ask.test-helper.js'
import { contextEditing, estimateTokens } from './index.js'

const task: Message = { role: 'user', content: 'summarise the files' }
const answer = { text: 'done', toolCalls: [] }
const conversation = () => frozen([task, ...turn('a'), ...turn('b'), ...turn('c'), ...turn('d')])

describe('contextEditing: when it edits', () => {
  it('under the budget: the request goes as it came, the estimate counted, no event', async () => {
    const messages = conversation()
    const asked = await ask(contextEditing({ maxInputTokens: 10_000 }), messages, () => answer)
    expect(asked.requests).toHaveLength(1)
    expect(asked.requests[0]?.messages).toBe(messages)
    expect(asked.events).toEqual([])
  })

  it('over the budget: edits before the first request, and the model is asked once', async () => {
    const asked = await ask(contextEditing({ maxInputTokens: 20, keep: 1 }), conversation(), () => answer)
    expect(asked.requests).toHaveLength(1)
    expect(asked.requests[0]?.messages.filter((m) => m.role === 'tool' && m.content === '[cleared]')).toHaveLength(3)
    expect(asked.events).toMatchObject([{ type: 'model.context_edited', reason: 'over_budget', attempt: 1, clearedToolResults: 3 }])
  })

  it('shortened before sending and still refused: the run ends, the model asked once, the edit named', async () => {
    const asked = await ask(contextEditing({ maxInputTokens: 20, keep: 1 }), conversation(), () => {
      throw tooLong()
    })
    expect(asked.requests).toHaveLength(1)
    expect(asked.events).toHaveLength(1)
    expect(asked.outcome.error).toMatchObject({
      kind: 'context_exceeded',
      message: expect.stringContaining('even after context editing (clearToolResults: 3 tool results cleared'),
      details: { contextEditing: { reason: 'over_budget', clearedToolResults: 3 } },
    })
  })

  it('a budget per model name replaces maxInputTokens', async () => {
    const layer = contextEditing({ maxInputTokens: 20, models: { roomy: 1_000_000 } })
    expect((await ask(layer, conversation(), () => answer, { name: 'roomy' })).events).toEqual([])
    expect((await ask(layer, conversation(), () => answer, { name: 'small' })).events).toHaveLength(1)
  })

  it("learns the provider's count from the last response's usage: a model that counts 3× the estimate is edited sooner", async () => {
    const run = createRun({ id: 'r-usage' })
    const messages = conversation()
    const estimate = estimateTokens({ messages, tools: [] })
    const layer = contextEditing({ maxInputTokens: Math.round(estimate * 2) })
    const first = await ask(layer, messages, () => ({ ...answer, usage: { inputTokens: estimate * 3 } }), { run })
    expect(first.events).toEqual([])
    const second = await ask(layer, messages, () => answer, { run })
    expect(second.events).toMatchObject([{ reason: 'over_budget' }])
    // Garbage usage is ignored, and another run starts from the plain estimate.
    const other = createRun({ id: 'r-other' })
    await ask(layer, messages, () => ({ ...answer, usage: { inputTokens: Number.NaN } }), { run: other })
    expect((await ask(layer, messages, () => answer, { run: other })).events).toEqual([])
  })

  it('countTokens replaces the estimate; one that throws or answers NaN falls back to it', async () => {
    const seen: number[] = []
    const counted = contextEditing({ maxInputTokens: 100, countTokens: (request) => seen.push(request.messages.length) * 1_000 })
    expect((await ask(counted, conversation(), () => answer)).events).toMatchObject([{ reason: 'over_budget' }])
    for (const countTokens of [
      () => Number.NaN,
      () => -1,
      () => {
        throw new Error('tokenizer down')
      },
    ]) {
      const asked = await ask(contextEditing({ maxInputTokens: 10_000, countTokens }), conversation(), () => answer)
      expect(asked.outcome.response).toEqual(answer)
      expect(asked.events).toEqual([])
    }
  })

  it('the estimate follows a transcript that grows, and one whose last message was replaced in place', () => {
    const messages: Message[] = [task]
    const first = estimateTokens({ messages, tools: [] })
    messages.push(...turn('a'))
    const grown = estimateTokens({ messages, tools: [] })
    expect(grown).toBeGreaterThan(first)
    messages[2] = { role: 'tool', callId: 'a', name: 'read', content: 'x'.repeat(4_000), ok: true }
    expect(estimateTokens({ messages, tools: [] })).toBeGreaterThanOrEqual(grown + 990)
    expect(estimateTokens({ messages: [...messages], tools: [], system: 'y'.repeat(400) })).toBeGreaterThanOrEqual(grown + 1_090)
  })

  it("counts the tools offered: their names, descriptions (a layer's note too) and JSON schemas", () => {
    const inputSchema = { type: 'object', properties: { path: { type: 'string', description: 'p'.repeat(4_000) } } }
    const bare = estimateTokens({ messages: [task], tools: [] })
    const offered = estimateTokens({ messages: [task], tools: [{ name: 'read', description: 'Reads', inputSchema }] })
    expect(offered - bare).toBeGreaterThanOrEqual(1_000)
    const noted = { name: 'read', description: `UNAVAILABLE: circuit open ${'n'.repeat(400)} Reads`, inputSchema }
    expect(estimateTokens({ messages: [task], tools: [noted] })).toBeGreaterThanOrEqual(offered + 100)
  })

  it('without a budget nothing is estimated: only a context_exceeded makes it edit', async () => {
    let counts = 0
    const layer = contextEditing({ countTokens: () => counts++ })
    await ask(layer, conversation(), () => answer)
    expect(counts).toBe(0)
  })
})

describe('contextEditing: what passes through', () => {
  it('other failures pass as the same object, with no edit and no second request', async () => {
    for (const failure of [new LoopError('fatal', 'no'), new ToolError('rate_limited', '429'), new Error('boom')]) {
      const asked = await ask(contextEditing(), conversation(), () => {
        throw failure
      })
      expect(asked.outcome.error).toBe(failure)
      expect(asked.requests).toHaveLength(1)
      expect(asked.events).toEqual([])
    }
  })

  it('cancelled while the refused request was out: no edit, no second request, the run’s reason', async () => {
    const controller = new AbortController()
    const asked = await ask(
      contextEditing(),
      conversation(),
      () => {
        controller.abort(new LoopError('cancelled', 'the caller cancelled'))
        throw tooLong()
      },
      { signal: controller.signal },
    )
    expect(asked.requests).toHaveLength(1)
    expect(asked.outcome.error).toMatchObject({ kind: 'cancelled' })
  })

  it('a listener that throws costs the event, never the call', async () => {
    const asked = await ask(contextEditing({ maxInputTokens: 20 }), conversation(), () => answer, {
      emit: () => {
        throw new Error('listener down')
      },
    })
    expect(asked.outcome.response).toEqual(answer)
    expect(asked.requests[0]?.messages.filter((m) => m.role === 'tool' && m.content === '[cleared]')).toHaveLength(1)
  })

  it('one layer serves concurrent calls of many runs, each edited on its own', async () => {
    const layer = contextEditing({ keep: 0 })
    const runs = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        ask(layer, frozen([task, ...turn(`a${i}`), ...turn(`b${i}`)]), async (_request, asked) => {
          await new Promise((resolve) => setImmediate(resolve))
          if (asked === 1) throw tooLong()
          return answer
        }),
      ),
    )
    runs.forEach((run, i) => {
      expect(run.requests[1]?.messages.flatMap((m) => (m.role === 'tool' ? [m.callId, m.content] : []))).toEqual([
        `a${i}`,
        '[cleared]',
        `b${i}`,
        '[cleared]',
      ])
    })
  })

  it('refuses bad options naming the option and the fix', () => {
    expect(() => contextEditing({ keep: -1 })).toThrow(OptionsError)
    expect(() => contextEditing({ strategy: 'summarize' as 'keepLast' })).toThrow(/strategy/)
    expect(() => contextEditing({ strategy: 'keepLast', excludeTools: ['search'] })).toThrow(
      /excludeTools: applies to strategy clearToolResults only/,
    )
    expect(() => contextEditing({ countTokens: 'tiktoken' as never })).toThrow(/countTokens: must be a function/)
  })
})
