import { readFileSync } from 'node:fs'
import { pairingProblems } from '@shallot/context-editing'
import { defineTool, type ModelAdapter, type ModelRequest } from 'shallot'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { longRunningAgent } from './readme-example.js'

const read = (file: string) => readFileSync(new URL(file, import.meta.url), 'utf8')

const tool = (name: string, size: number) =>
  defineTool({
    name,
    description: name,
    input: z.object({ n: z.number() }),
    effect: 'read',
    execute: ({ n }) => `${name} ${n}: ${'x'.repeat(size)}`,
  })

describe('README', () => {
  it('shows the type-checked example verbatim (importing the published name)', () => {
    const example = read('./readme-example.ts')
    expect(read('../../../context-editing/README.md')).toContain(example)
  })

  it('runs: a provider that refuses past 150,000 characters; old file reads cleared, the plan never', async () => {
    const seen: ModelRequest['messages'][] = []
    let turn = 0
    const model: ModelAdapter = {
      name: 'gpt-4o',
      async generate(request) {
        seen.push(request.messages)
        const chars = request.messages.reduce((sum, m) => sum + (m.content?.length ?? 0), 0)
        if (chars > 150_000) {
          throw Object.assign(new Error("This model's maximum context length is 128000 tokens."), {
            status: 400,
            code: 'context_length_exceeded',
          })
        }
        turn++
        if (turn === 1) return { toolCalls: [{ id: 'plan', name: 'read_plan', args: { n: 0 } }] }
        if (turn <= 12) return { toolCalls: [{ id: `f${turn}`, name: 'read_file', args: { n: turn } }] }
        return { text: 'all files read' }
      },
    }
    const outcome = await longRunningAgent(model, [tool('read_plan', 19_000), tool('read_file', 19_000)]).run({ input: 'read every file' })
    expect(outcome).toMatchObject({ status: 'completed', output: 'all files read' })
    const last = seen.at(-1) ?? []
    expect(pairingProblems(last)).toEqual([])
    const contents = last.flatMap((m) => (m.role === 'tool' ? [m.content] : []))
    expect(contents[0]).toMatch(/^read_plan 0: x{100}/)
    expect(contents.filter((c) => c === '[cleared]')).toHaveLength(11 - 3)
    expect(contents.slice(-3).every((c) => c.startsWith('read_file'))).toBe(true)
  })
})
