import { createRun, createStack, defineTool, LoopError, type StackEvent, ToolError } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { z } from 'zod'
import { circuitBreaker, consecutive, sampling } from './index.js'

const call = (id = 'c') => ({ id, name: 'flaky', args: { q: 'shallot' } })
const timedOut = () => new ToolError('timeout', "Tool 'flaky' timed out after 5s")

/** A tool whose every invocation waits for the test to answer it. */
function controlledTool() {
  const pending: Array<{ resolve: (v: string) => void; reject: (e: unknown) => void }> = []
  let calls = 0
  const tool = defineTool({
    name: 'flaky',
    description: 'Search the web',
    input: z.object({ q: z.string() }),
    effect: 'read',
    execute: (_args, { signal }) => {
      calls++
      return new Promise<string>((resolve, reject) => {
        const onAbort = () => reject(signal.reason)
        const done = () => signal.removeEventListener('abort', onAbort)
        signal.addEventListener('abort', onAbort, { once: true })
        pending.push({
          resolve: (v) => {
            done()
            resolve(v)
          },
          reject: (e) => {
            done()
            reject(e)
          },
        })
      })
    },
  })
  return {
    tool,
    pending,
    get calls() {
      return calls
    },
  }
}

/** A flaky tool: times out twice, would succeed from the third call on. */
function flakyTool() {
  let calls = 0
  const tool = defineTool({
    name: 'flaky',
    description: 'Search the web',
    input: z.object({ q: z.string() }),
    effect: 'read',
    execute: () => {
      calls++
      if (calls <= 2) throw timedOut()
      return `result ${calls}`
    },
  })
  return {
    tool,
    get calls() {
      return calls
    },
  }
}

function recordStates(stack: { on(listener: (e: StackEvent) => void): () => void }) {
  const states: string[] = []
  stack.on((e) => {
    if (e.type === 'circuit-breaker.state') states.push(`${e.from}->${e.to}`)
  })
  return states
}

describe('circuitBreaker', () => {
  afterEach(() => {
    vi.useRealTimers()
  })

  it('opens after two timeouts, refuses the third call without invoking the tool, and lets exactly one probe through after the cooldown', async () => {
    const clock = manualClock()
    const flaky = flakyTool()
    const stack = createStack({ middleware: [circuitBreaker({ policy: consecutive({ threshold: 2 }) })], tools: [flaky.tool], clock })
    const states = recordStates(stack)

    expect((await stack.dispatch(call('1'))).error?.code).toBe('timeout')
    expect((await stack.dispatch(call('2'))).error?.code).toBe('timeout')
    const third = await stack.dispatch(call('3'))
    expect(third.ok).toBe(false)
    expect(third.error).toMatchObject({
      code: 'circuit_open',
      category: 'transient',
      retryable: false,
      safeToRepeat: true,
      retryAfterMs: 30_000,
      message:
        "tool 'flaky' temporarily unavailable: circuit breaker open after 2 failures. Use a different approach or report you cannot proceed.",
    })
    expect(flaky.calls).toBe(2)

    await clock.advance(30_000)
    const [probe, other] = await Promise.all([stack.dispatch(call('4')), stack.dispatch(call('5'))])
    expect(probe).toMatchObject({ ok: true, value: 'result 3' })
    expect(other.error?.code).toBe('circuit_open')
    expect(flaky.calls).toBe(3)
    expect(states).toEqual(['closed->open', 'open->half-open', 'half-open->closed'])
    expect((await stack.dispatch(call('6'))).ok).toBe(true)
  })

  it('lets exactly one of 100 concurrent calls after the cooldown reach the tool', async () => {
    const clock = manualClock()
    const flaky = controlledTool()
    const stack = createStack({ middleware: [circuitBreaker({ policy: consecutive({ threshold: 2 }) })], tools: [flaky.tool], clock })
    for (const id of ['1', '2']) {
      const result = stack.dispatch(call(id))
      await clock.advance(0)
      flaky.pending.shift()?.reject(timedOut())
      await result
    }
    await clock.advance(30_000)

    const results = Array.from({ length: 100 }, (_, i) => stack.dispatch(call(`p${i}`)))
    await clock.advance(0)
    expect(flaky.calls).toBe(3)
    flaky.pending.shift()?.resolve('healthy')
    const settled = await Promise.all(results)
    expect(settled.filter((r) => r.ok)).toHaveLength(1)
    expect(settled.filter((r) => r.error?.code === 'circuit_open')).toHaveLength(99)
    expect(flaky.calls).toBe(3)
  })

  it('gives a hung probe’s slot to the next call once maxHalfOpenMs has passed', async () => {
    const clock = manualClock()
    const flaky = controlledTool()
    const breaker = circuitBreaker({ policy: consecutive({ threshold: 1 }), cooldownMs: 1000, maxHalfOpenMs: 10_000 })
    const stack = createStack({ middleware: [breaker], tools: [flaky.tool], clock })
    const types: string[] = []
    stack.on((e) => types.push(e.type))
    const first = stack.dispatch(call('1'))
    await clock.advance(0)
    flaky.pending.shift()?.reject(timedOut())
    await first
    await clock.advance(1000)

    void stack.dispatch(call('hung')) // never answered
    await clock.advance(0)
    const refused = await stack.dispatch(call('2'))
    expect(refused.error).toMatchObject({ code: 'circuit_open', retryAfterMs: 10_000 })
    expect(refused.content).toContain('a recovery probe is already running')
    await clock.advance(9_999)
    expect((await stack.dispatch(call('3'))).error?.code).toBe('circuit_open')
    expect(flaky.calls).toBe(2)

    await clock.advance(1)
    const next = stack.dispatch(call('4'))
    await clock.advance(0)
    expect(flaky.calls).toBe(3)
    expect(types).toContain('circuit-breaker.probe_expired')
    flaky.pending[1]?.resolve('healthy')
    expect(await next).toMatchObject({ ok: true, value: 'healthy' })
  })

  it('frees a cancelled probe’s slot with no verdict', async () => {
    const clock = manualClock()
    const flaky = controlledTool()
    const stack = createStack({
      middleware: [circuitBreaker({ policy: consecutive({ threshold: 1 }), cooldownMs: 1000 })],
      tools: [flaky.tool],
      clock,
    })
    const states = recordStates(stack)
    const first = stack.dispatch(call('1'))
    await clock.advance(0)
    flaky.pending.shift()?.reject(timedOut())
    await first
    await clock.advance(1000)

    const controller = new AbortController()
    const probe = stack.dispatch(call('probe'), { signal: controller.signal })
    await clock.advance(0)
    expect((await stack.dispatch(call('2'))).error?.code).toBe('circuit_open')
    controller.abort()
    await expect(probe).rejects.toSatisfy((e: unknown) => LoopError.is(e) && e.kind === 'cancelled')

    const next = stack.dispatch(call('3'))
    await clock.advance(0)
    expect(flaky.calls).toBe(3)
    expect(states).toEqual(['closed->open', 'open->half-open'])
    flaky.pending[1]?.resolve('healthy')
    expect((await next).ok).toBe(true)
    expect(states).toEqual(['closed->open', 'open->half-open', 'half-open->closed'])
  })

  it('stays closed through 1,000 invalid_arguments failures', async () => {
    const flaky = flakyTool()
    const stack = createStack({ middleware: [circuitBreaker({ policy: consecutive({ threshold: 2 }) })], tools: [flaky.tool] })
    for (let i = 0; i < 1000; i++) {
      const result = await stack.dispatch({ id: `bad${i}`, name: 'flaky', args: { q: 42 } })
      expect(result.error?.code).toBe('invalid_arguments')
    }
    expect((await stack.dispatch(call())).error?.code).toBe('timeout')
    expect(flaky.calls).toBe(1)
  })

  it('never opens while the window holds fewer than minimumThroughput calls, and opens once it holds enough', async () => {
    const clock = manualClock()
    const flaky = controlledTool()
    const policy = sampling({ failureRatio: 0.5, minimumThroughput: 10, windowMs: 60_000 })
    const stack = createStack({ middleware: [circuitBreaker({ policy })], tools: [flaky.tool], clock })
    const fail = async (id: string) => {
      const result = stack.dispatch(call(id))
      await clock.advance(0)
      flaky.pending.shift()?.reject(timedOut())
      return result
    }
    // 1,000 failures, 7 s apart: a 60 s window never holds 10 of them.
    for (let i = 0; i < 1000; i++) {
      expect((await fail(`slow${i}`)).error?.code).toBe('timeout')
      await clock.advance(7_000)
    }
    expect(flaky.calls).toBe(1000)
    await clock.advance(60_000)
    for (let i = 0; i < 10; i++) expect((await fail(`fast${i}`)).error?.code).toBe('timeout')
    expect((await stack.dispatch(call('refused'))).error?.code).toBe('circuit_open')
    expect(flaky.calls).toBe(1010)
  })

  it('changes nothing when the wall clock moves a year either way', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    const flaky = flakyTool()
    const breaker = circuitBreaker({ policy: consecutive({ threshold: 1 }), cooldownMs: 60_000 })
    const stack = createStack({ middleware: [breaker], tools: [flaky.tool] })
    await stack.dispatch(call('1'))
    const year = 365 * 24 * 3600 * 1000
    for (const shift of [year, -2 * year]) {
      vi.setSystemTime(Date.now() + shift)
      const result = await stack.dispatch(call())
      expect(result.error?.code).toBe('circuit_open')
      expect(result.error?.retryAfterMs).toBeGreaterThan(55_000)
      expect(stack.describeTool(flaky.tool, createRun())).toMatch(/^UNAVAILABLE: circuit open, retry in (5\d|60)s$/)
    }
    expect(flaky.calls).toBe(1)
  })
})
