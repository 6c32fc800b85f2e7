import { readFileSync } from 'node:fs'
import { createStack, defineTool, type ModelAdapter, ToolError } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { retry } from './index.js'
import { patientAgent } from './readme-model-example.js'

const read = (file: string) => readFileSync(new URL(file, import.meta.url), 'utf8')

describe('README, tool calls and model calls', () => {
  it('shows the type-checked example verbatim (importing the published name)', () => {
    const example = read('./readme-model-example.ts').replace("from './index.js'", "from '@shallot/retry'")
    expect(read('../README.md')).toContain(example)
  })

  it('runs: two 429s asking for 2 s are each waited out exactly, the third attempt answers', async () => {
    const clock = manualClock()
    const asked: number[] = []
    const gpt: ModelAdapter = {
      generate: async () => {
        asked.push(clock.now())
        if (asked.length < 3)
          throw new ToolError('rate_limited', 'HTTP 429', { category: 'transient', retryable: true, retryAfterMs: 2000 })
        return { text: 'answered', toolCalls: [] }
      },
    }
    const run = patientAgent(gpt, [], clock).run({ input: 'hi' })
    await clock.runAll()
    expect(await run).toMatchObject({ status: 'completed', output: 'answered', steps: 3 })
    expect(asked).toEqual([0, 2000, 4000])
  })

  it('runs: the same layer repeats a tool call that answered 429 once', async () => {
    const clock = manualClock()
    let calls = 0
    const quote = defineTool({
      name: 'quote',
      description: 'A price quote',
      input: z.object({}),
      effect: 'read',
      execute: () => {
        calls++
        if (calls === 1) throw new ToolError('rate_limited', 'HTTP 429', { category: 'transient', retryable: true, retryAfterMs: 1000 })
        return '42 EUR'
      },
    })
    let turn = 0
    const gpt: ModelAdapter = {
      generate: async ({ messages }) => {
        turn++
        if (turn === 1) return { toolCalls: [{ id: 'c1', name: 'quote', args: {} }] }
        return { text: String(messages.at(-1)?.content), toolCalls: [] }
      },
    }
    const run = patientAgent(gpt, [quote], clock).run({ input: 'price?' })
    await clock.runAll()
    expect(await run).toMatchObject({ status: 'completed', output: '42 EUR' })
    expect(calls).toBe(2)
    expect(clock.now()).toBe(1000)
  })
})

describe('README, when retry gives up', () => {
  it('a dead upstream: the error keeps its code and message, is no longer retryable, and its hint is the one the README quotes', async () => {
    const clock = manualClock()
    const readFile = defineTool({
      name: 'read_file',
      description: 'Read a file',
      input: z.object({ path: z.string() }),
      effect: 'read',
      execute: () => {
        throw new ToolError('upstream_error', 'HTTP 500', { category: 'transient', retryable: true, retryAfterMs: 1000 })
      },
    })
    const stack = createStack({ tools: [readFile], clock, middleware: [retry({ maxAttempts: 3 })] })
    const pending = stack.dispatch({ id: 'c1', name: 'read_file', args: { path: 'a.txt' } })
    await clock.runAll()
    const result = await pending
    expect(result.attempts).toBe(3)
    expect(result.error).toMatchObject({ code: 'upstream_error', message: 'HTTP 500', retryable: false })
    expect(result.error?.retryAfterMs).toBeUndefined()
    expect(read('../README.md').replace(/\s+/g, ' ')).toContain(`\`${result.error?.hint}\``)
  })
})
