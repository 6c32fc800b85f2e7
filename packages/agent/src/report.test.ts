import { LoopError } from '@shallot/core'
import { describe, expect, it } from 'vitest'
import { buildReport } from './index.js'

/** A stop as a provider adapter (`@shallot/ai-sdk`) reports a refusal: its words in `providerMessage`, why in `reason`. */
const refusal = (message: string, reason: string, status: number) =>
  new LoopError('user_input_required', message, {
    details: { status, providerMessage: message.split(': ').at(-1), reason },
  })

describe('buildReport names what the model provider refused', () => {
  it('a 401 says the provider refused the credentials, once, and that the key is what to fix', () => {
    const error = refusal(
      'the model provider refused the credentials (401 invalid_api_key): Incorrect API key provided',
      'credentials',
      401,
    )
    const report = buildReport('r1', 'task', [], error)
    expect(report.why).toBe('the model provider refused the credentials (401 invalid_api_key): Incorrect API key provided')
    expect(report.nextSteps).toBe(
      "Check the model provider's credentials (the API key, and its access to this model), then resume it with agent.resume('r1').",
    )
    expect(report.text).not.toContain('a tool needs something')
    expect(report.text).not.toContain('Provide what the tool asks for')
  })

  it('a quota refusal says the quota or billing is what to fix', () => {
    const error = refusal(
      "the model provider's quota or billing is exhausted (429 insufficient_quota): You exceeded your current quota",
      'quota',
      429,
    )
    const report = buildReport('r2', 'task', [], error)
    expect(report.why).toBe(error.message)
    expect(report.nextSteps).toBe("Add credit or raise the quota at the model provider, then resume it with agent.resume('r2').")
  })

  it('a tool that needs a person keeps its own wording', () => {
    const error = new LoopError('user_input_required', 'lookup needs a person: log in first', { details: { tool: 'lookup' } })
    const report = buildReport('r3', 'task', [], error)
    expect(report.why).toBe('a tool needs something only a person can provide')
    expect(report.nextSteps).toContain('Provide what the tool asks for')
  })

  it('says "the model call failed" once when the message already says it', () => {
    const error = new LoopError(
      'model_failed',
      'the model call failed: Request cannot be constructed from a URL that includes credentials',
      {
        details: { providerMessage: 'Request cannot be constructed from a URL that includes credentials' },
      },
    )
    expect(buildReport('r4', 'task', [], error).why).toBe(error.message)
    const failure = new LoopError('model_failed', 'the model call failed after 1 attempt: boom', {
      details: { attempts: 1, failure: 'the model call failed: boom' },
    })
    expect(buildReport('r5', 'task', [], failure).why).toBe('the model call failed: boom')
  })

  it('names the resume call it suggests, so a host that resumes its own way can put its command there', () => {
    const report = buildReport('r6', 'task', [], new LoopError('cancelled', 'the run was cancelled'))
    expect(report.resume).toBe("agent.resume('r6')")
    expect(report.nextSteps).toContain(report.resume as string)
    const pending = new LoopError('user_input_required', "call c1 to 'w' needs approval: why", {
      details: { pending: [{ callId: 'c1', tool: 'w', arguments: '{}', reason: 'why' }] },
    })
    const waiting = buildReport('r7', 'task', [], pending)
    expect(waiting.resume).toBe(`agent.resume("r7", { approvals: { "c1": 'approve' | 'deny' | { args } } })`)
    expect(waiting.nextSteps).toContain(waiting.resume as string)
    expect(buildReport('r8', 'task', [], new LoopError('context_exceeded', 'too long')).resume).toBeUndefined()
  })
})
