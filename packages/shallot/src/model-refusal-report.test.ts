// A model provider that refuses the key with no words of its own (a bare 401, an empty body) still ends the run with
// a report that names the provider and the key — not "a tool needs something only a person can provide", which sent
// the reader looking for a tool that never ran.
import { describe, expect, it } from 'vitest'
import { createAgent, defaultModelMiddleware, type ModelAdapter } from './index.js'

/** An adapter whose provider answers every request with `status` and an empty body. */
const refusing = (status: number, body: Record<string, unknown> = {}): ModelAdapter => ({
  name: 'gpt-test',
  async generate() {
    throw Object.assign(new Error(''), { status, ...body })
  },
})

describe('a provider refusal with no message of its own', () => {
  it('a bare 401 names the credentials as what to fix', async () => {
    const agent = createAgent({ model: refusing(401), tools: [], modelMiddleware: defaultModelMiddleware() })
    const outcome = await agent.run({ input: 'hello' })
    expect(outcome.status).toBe('stopped')
    if (outcome.status !== 'stopped') return
    expect(outcome.error.kind).toBe('user_input_required')
    expect(outcome.report.why).toBe('the model provider refused the credentials (401)')
    expect(outcome.report.nextSteps).toContain("Check the model provider's credentials")
    expect(outcome.report.text).not.toContain('a tool needs')
    expect(outcome.report.text).not.toContain('Provide what the tool asks for')
  })

  it('a bare 403 reads the same way', async () => {
    const agent = createAgent({ model: refusing(403), tools: [], modelMiddleware: defaultModelMiddleware() })
    const outcome = await agent.run({ input: 'hello' })
    expect(outcome.status === 'stopped' && outcome.report.why).toBe('the model provider refused the credentials (403)')
  })
})

describe('agent.run() given the task instead of its options', () => {
  it('says to pass { input } and shows the call, for a string, null and a number', async () => {
    const agent = createAgent({ model: refusing(401), tools: [] })
    await expect(agent.run('hello' as never)).rejects.toThrow(
      'agent.run(): takes an options object with the task as input, e.g. agent.run({ input: "hello" }); got string',
    )
    await expect(agent.run(null as never)).rejects.toThrow(/takes an options object .* got null$/)
    await expect(agent.run(42 as never)).rejects.toThrow(/takes an options object .* got number$/)
    await expect(agent.run({ input: 42 } as never)).rejects.toThrow('agent.run(): input must be a string (the task)')
  })
})
