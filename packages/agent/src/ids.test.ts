import { createRun, createStack, defineTool } from '@shallot/core'
import { urlAlphabet } from 'nanoid'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createAgent } from './index.js'

const tool = defineTool({ name: 'echo', description: 'Echo', input: z.object({}), effect: 'read', execute: () => 'ok' })
const idOf = (size: number) => new RegExp(`^[${urlAlphabet.replace('-', '\\-')}]{${size}}$`)

describe('generated ids', () => {
  it('a run id is 12 characters of nanoid’s alphabet, and 20,000 of them (many refills of the pool) are distinct', () => {
    const ids = new Set<string>()
    for (let i = 0; i < 20_000; i++) {
      const id = createRun().id
      expect(id).toMatch(idOf(12))
      ids.add(id)
    }
    expect(ids.size).toBe(20_000)
  })

  it('uses every symbol of the alphabet about evenly', () => {
    const counts = new Map<string, number>()
    for (let i = 0; i < 20_000; i++) for (const c of createRun().id) counts.set(c, (counts.get(c) ?? 0) + 1)
    expect(counts.size).toBe(64)
    // 240,000 symbols: 3,750 each on average; a biased draw (a symbol never or twice as often) is far outside.
    for (const n of counts.values()) {
      expect(n).toBeGreaterThan(3_000)
      expect(n).toBeLessThan(4_500)
    }
  })

  it('an agent run without a runId gets a fresh one each time', async () => {
    const agent = createAgent({ model: { generate: async () => ({ text: 'done' }) }, tools: [tool] })
    const first = await agent.run({ input: 'x' })
    const second = await agent.run({ input: 'x' })
    expect(first.runId).toMatch(idOf(12))
    expect(second.runId).toMatch(idOf(12))
    expect(first.runId).not.toBe(second.runId)
  })

  it('a tool call without an id (or with an empty one) gets a 10-character id, distinct per call', async () => {
    const stack = createStack({ tools: [tool] })
    const results = await Promise.all(
      Array.from({ length: 500 }, (_, i) =>
        stack.dispatch({ id: i % 2 === 0 ? '' : (undefined as unknown as string), name: 'echo', args: {} }),
      ),
    )
    for (const result of results) expect(result.callId).toMatch(idOf(10))
    expect(new Set(results.map((r) => r.callId)).size).toBe(500)
  })
})
