import { createAgent } from '@shallot/agent'
import { circuitBreaker, consecutive } from '@shallot/circuit-breaker'
import { type Clock, createStack, defineTool, type Stack, ToolError } from '@shallot/core'
import { constant, retry } from '@shallot/retry'
import { scriptedModel } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { fallback } from './index.js'

describe('fallback in an agent run', () => {
  it('the model reads the status page’s cached answer and its age once the circuit is open, and answers from it', async () => {
    // Virtual time the script moves between turns; a sleep only ends when its signal aborts (nothing here waits on time).
    let now = 0
    const clock: Clock = {
      now: () => now,
      sleep: (_ms, signal) =>
        new Promise<void>((_resolve, reject) => signal?.addEventListener('abort', () => reject(signal.reason), { once: true })),
    }
    let up = true
    let runs = 0
    let runsBeforeOpenCircuit = -1
    const statusPage = defineTool({
      name: 'status_page',
      description: 'Current status of our services',
      input: z.object({ region: z.string() }),
      effect: 'read',
      execute: ({ region }) => {
        runs++
        if (!up) throw new ToolError('upstream_error', 'HTTP 503', { category: 'transient', retryable: true })
        return `${region}: all systems go`
      },
    })
    let stack: Stack
    const layer = fallback({ tools: { status_page: { from: 'cache' } }, dispatch: (call, options) => stack.dispatch(call, options) })
    stack = createStack({
      tools: [statusPage],
      clock,
      middleware: [layer, circuitBreaker({ policy: consecutive({ threshold: 1 }), cooldownMs: 600_000 }), retry({ backoff: constant(0) })],
    })
    const ask = { name: 'status_page', args: { region: 'eu' } }
    const model = scriptedModel([
      { toolCalls: [ask] },
      () => {
        now += 4 * 60_000
        up = false
        return { toolCalls: [ask] }
      },
      () => {
        runsBeforeOpenCircuit = runs
        return { toolCalls: [ask] }
      },
      ({ lastResults }) => ({ text: `The status page says: ${lastResults[0]?.content}` }),
    ])
    const outcome = await createAgent({ model, stack, clock }).run({ input: 'Is the EU region up?' })
    expect(outcome.status).toBe('completed')
    if (outcome.status !== 'completed') return
    expect(outcome.output).toBe('The status page says: {"note":"cached 4 min ago","value":"eu: all systems go"}')
    // The call behind the open circuit never reached the tool.
    expect(runs).toBe(runsBeforeOpenCircuit)
    expect(runs).toBeGreaterThan(1)
    expect(outcome.transcript.filter((m) => m.role === 'tool').every((m) => m.ok)).toBe(true)
  })
})

describe('fallback, read by a model that scans for failure words', () => {
  // A reader that has never heard of shallot: a result with a failure word in it failed, so it asks again (up to three
  // times), then gives up. The fallback's answer must read as the answer it is.
  const FAILURE = /fail|error|circuit_open|unavailable/i

  it('takes the cached answer, as JSON, at the first reading: no failure word, no code, no escaped string', async () => {
    let now = 0
    const clock: Clock = {
      now: () => now,
      sleep: (_ms, signal) =>
        new Promise<void>((_resolve, reject) => signal?.addEventListener('abort', () => reject(signal.reason), { once: true })),
    }
    let up = true
    const statusPage = defineTool({
      name: 'status_page',
      description: 'Current status of a service',
      input: z.object({ service: z.string() }),
      effect: 'read',
      execute: ({ service }) => {
        if (!up) throw new ToolError('upstream_error', 'HTTP 503', { category: 'transient', retryable: true })
        return JSON.stringify({ service, status: 'operational' })
      },
    })
    let stack: Stack
    const layer = fallback({ tools: { status_page: { from: 'cache' } }, dispatch: (call, options) => stack.dispatch(call, options) })
    stack = createStack({
      tools: [statusPage],
      clock,
      middleware: [layer, circuitBreaker({ policy: consecutive({ threshold: 1 }), cooldownMs: 600_000 }), retry({ backoff: constant(0) })],
    })
    const ask = { name: 'status_page', args: { service: 'payments' } }
    const read: string[] = []
    const model = scriptedModel([
      { toolCalls: [ask] },
      ({ lastResults }) => {
        read.push(lastResults[0]?.content ?? '')
        now += 3 * 60_000
        up = false
        return { toolCalls: [ask] }
      },
      ...Array.from({ length: 3 }, () => ({ lastResults }: { lastResults: readonly { content: string }[] }) => {
        const content = lastResults[0]?.content ?? ''
        read.push(content)
        return FAILURE.test(content) ? { toolCalls: [ask] } : { text: `payments: ${content}` }
      }),
      { text: 'gave up: the status page kept failing' },
    ])
    const outcome = await createAgent({ model, stack, clock }).run({ input: 'Is payments up?' })
    expect(outcome).toMatchObject({
      status: 'completed',
      output: 'payments: {"note":"cached 3 min ago","value":{"service":"payments","status":"operational"}}',
    })
    expect(read).toEqual([
      '{"service":"payments","status":"operational"}',
      '{"note":"cached 3 min ago","value":{"service":"payments","status":"operational"}}',
    ])
    expect(read.some((content) => FAILURE.test(content))).toBe(false)
    // Two calls by the model: the one that worked and the one the cache answered; no call asked again.
    if (outcome.status === 'completed') expect(outcome.transcript.filter((m) => m.role === 'tool')).toHaveLength(2)
  })
})
