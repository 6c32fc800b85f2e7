import { memoryBreakerStore } from '@shallot/circuit-breaker'
import { createRun, defineMiddleware, defineTool, ToolError, type ToolResult } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { ConfigError, type ConfigInput, createStackFromConfig, loadConfig } from './index.js'

const QUICK = { backoff: 'constant', baseMs: 100, maxAttempts: 3 }
const SLOW = { backoff: 'constant', baseMs: 700, maxAttempts: 2 }

/** A tool that fails its first two attempts of every call and records each execution by call. */
function flakyWorld() {
  const clock = manualClock()
  const executions = new Map<string, number[]>()
  const flaky = defineTool({
    name: 'flaky',
    description: 'fails twice per call, then answers',
    input: z.object({ call: z.string() }),
    effect: 'read',
    execute: async ({ call }, { attempt }) => {
      executions.set(call, [...(executions.get(call) ?? []), attempt])
      if (attempt <= 2) throw new ToolError('upstream_error', 'upstream failed', { retryable: true, safeToRepeat: true })
      return `${call} done`
    },
  })
  return { clock, executions, tools: [flaky] }
}

const withRetry = (policy: object): ConfigInput => ({ stack: ['panic-catcher', { retry: policy }, { timeout: { ms: 5000 } }] })

/** Which policy a finished call ran under, read from its retry delays and attempts alone. */
function policyOf(result: ToolResult): 'quick' | 'slow' | 'mixed' {
  const delays = result.trace.filter((e) => e.type === 'retry.scheduled').map((e) => e.delayMs)
  if (result.ok && result.attempts === 3 && delays.every((d) => d === 100) && delays.length === 2) return 'quick'
  if (!result.ok && result.attempts === 2 && delays.length === 1 && delays[0] === 700) return 'slow'
  return 'mixed'
}

describe('reconfigure', () => {
  it('swaps the retry policy under concurrent dispatch: no call dropped, none executed twice, each under exactly one policy', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 0, max: 1500 }), { minLength: 1, maxLength: 12 }),
        fc.integer({ min: 0, max: 1500 }),
        async (starts, swapAt) => {
          const w = flakyWorld()
          const quick = await loadConfig(withRetry(QUICK))
          const slow = await loadConfig(withRetry(SLOW))
          const stack = createStackFromConfig(quick, { tools: w.tools, clock: w.clock })
          const events: Array<{ at: number; what: 'start' | 'swap'; id: string }> = [
            ...starts.map((at, i) => ({ at, what: 'start' as const, id: `call-${i}` })),
            { at: swapAt, what: 'swap' as const, id: '' },
          ].sort((a, b) => a.at - b.at || (a.what === 'swap' ? -1 : 1))
          const pending = new Map<string, Promise<ToolResult>>()
          const expected = new Map<string, 'quick' | 'slow'>()
          for (const event of events) {
            await w.clock.advance(event.at - w.clock.now())
            if (event.what === 'swap') {
              stack.reconfigure(slow)
              continue
            }
            expected.set(event.id, stack.config === slow ? 'slow' : 'quick')
            pending.set(event.id, stack.dispatch({ id: event.id, name: 'flaky', args: { call: event.id } }))
          }
          await w.clock.runAll()
          const results = await Promise.all(pending.values())
          expect(results).toHaveLength(starts.length)
          for (const result of results) {
            const attempts = w.executions.get(result.callId)
            expect(attempts).toEqual(expected.get(result.callId) === 'quick' ? [1, 2, 3] : [1, 2])
            expect(policyOf(result)).toBe(expected.get(result.callId))
          }
          expect(w.executions.size).toBe(starts.length)
        },
      ),
      { numRuns: 40 },
    )
  })

  it('lets calls in flight finish under the policy they started with', async () => {
    const w = flakyWorld()
    const stack = createStackFromConfig(await loadConfig(withRetry(QUICK)), { tools: w.tools, clock: w.clock })
    const early = stack.dispatch({ id: 'early', name: 'flaky', args: { call: 'early' } })
    await w.clock.advance(50) // early sleeps before its second attempt
    stack.reconfigure(await loadConfig(withRetry(SLOW)))
    const late = stack.dispatch({ id: 'late', name: 'flaky', args: { call: 'late' } })
    await w.clock.runAll()
    expect(policyOf(await early)).toBe('quick')
    expect(policyOf(await late)).toBe('slow')
  })

  it('keeps breaker counts across a swap of the retry policy: an open circuit stays open', async () => {
    const clock = manualClock()
    let executions = 0
    const down = defineTool({
      name: 'down',
      description: 'always fails',
      input: z.object({}),
      effect: 'read',
      execute: async () => {
        executions++
        throw new ToolError('upstream_error', 'upstream is down', { retryable: true, safeToRepeat: true })
      },
    })
    const config = (retry: object) =>
      loadConfig({ stack: [{ 'circuit-breaker': { policy: { consecutive: { threshold: 2 } }, cooldownMs: 60_000 } }, { retry }] })
    const stack = createStackFromConfig(await config({ backoff: 'none' }), { tools: [down], clock })
    for (const id of ['a', 'b']) await stack.dispatch({ id, name: 'down', args: {} })
    expect(executions).toBe(2)
    stack.reconfigure(await config({ backoff: 'constant', baseMs: 10, maxAttempts: 2 }))
    const refused = await stack.dispatch({ id: 'c', name: 'down', args: {} })
    expect(refused.error?.code).toBe('circuit_open')
    expect(executions).toBe(2)
  })

  it("keeps breaker state even when the breaker's own options change, given a shared breaker store", async () => {
    const clock = manualClock()
    const down = defineTool({
      name: 'down',
      description: 'always fails',
      input: z.object({}),
      effect: 'read',
      execute: async () => {
        throw new ToolError('upstream_error', 'upstream is down', { retryable: false })
      },
    })
    const config = (cooldownMs: number) =>
      loadConfig({ stack: [{ 'circuit-breaker': { policy: { consecutive: { threshold: 1 } }, cooldownMs } }] })
    const stack = createStackFromConfig(await config(60_000), { tools: [down], clock, stores: { breaker: memoryBreakerStore() } })
    await stack.dispatch({ id: 'a', name: 'down', args: {} })
    stack.reconfigure(await config(90_000))
    expect((await stack.dispatch({ id: 'b', name: 'down', args: {} })).error?.code).toBe('circuit_open')
  })

  it("keeps idempotency records across a swap of idempotency's own options (the store belongs to the stack)", async () => {
    const clock = manualClock()
    let charges = 0
    const charge = defineTool({
      name: 'charge_card',
      description: 'charges once per logical call',
      input: z.object({ amount: z.number() }),
      effect: 'write',
      execute: async ({ amount }) => `receipt ${++charges} for ${amount}`,
    })
    const stack = createStackFromConfig(await loadConfig({ stack: [{ idempotency: { ttlMs: 60_000 } }] }), { tools: [charge], clock })
    const run = createRun({ id: 'run-1' })
    const first = await stack.dispatch({ id: 'c1', name: 'charge_card', args: { amount: 5 } }, { run })
    stack.reconfigure(await loadConfig({ stack: [{ idempotency: { ttlMs: 120_000 } }] }))
    const again = await stack.dispatch({ id: 'c2', name: 'charge_card', args: { amount: 5 } }, { run })
    expect(first).toMatchObject({ ok: true, value: 'receipt 1 for 5', replayed: false })
    expect(again).toMatchObject({ ok: true, value: 'receipt 1 for 5', replayed: true })
    expect(charges).toBe(1)
  })

  it('keeps the layer instances whose options did not change and creates only the changed ones', async () => {
    const created: string[] = []
    const counted = defineMiddleware({
      name: 'counted',
      options: z.strictObject({ label: z.string() }),
      create: ({ label }) => {
        created.push(label)
        return async function counted(_ctx, next) {
          await next()
        }
      },
    })
    const w = flakyWorld()
    const load = (label: string, retry: object) => loadConfig({ stack: [{ counted: { label } }, { retry }] }, { middleware: [counted] })
    const stack = createStackFromConfig(await load('a', QUICK), { tools: w.tools, clock: w.clock })
    stack.reconfigure(await load('a', SLOW))
    stack.reconfigure(await load('b', SLOW))
    expect(created).toEqual(['a', 'b'])
  })

  it('rejects a config that cannot be built and keeps running the current one', async () => {
    const w = flakyWorld()
    const quick = await loadConfig(withRetry(QUICK))
    const stack = createStackFromConfig(quick, { tools: w.tools, clock: w.clock })
    const broken = await loadConfig({ ...withRetry(SLOW), tools: { flakey: { retry: 'none' } } })
    expect(() => stack.reconfigure(broken)).toThrow(ConfigError)
    expect(stack.config).toBe(quick)
    const pending = stack.dispatch({ id: 'after', name: 'flaky', args: { call: 'after' } })
    await w.clock.runAll()
    expect(policyOf(await pending)).toBe('quick')
  })
})
