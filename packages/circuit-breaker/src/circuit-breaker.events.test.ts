import { createAgent } from '@shallot/agent'
import { createRun, createStack, defineTool, type Logger, OptionsError, ToolError } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { type BreakerStateChange, circuitBreaker, consecutive, sampling } from './index.js'

/** A tool that fails while `sick.value` is true. */
function sickTool() {
  const sick = { value: true, calls: 0 }
  const tool = defineTool({
    name: 'search',
    description: 'Search the web',
    input: z.object({}),
    effect: 'read',
    execute: () => {
      sick.calls++
      if (sick.value) throw new ToolError('upstream_error', 'search answered 503')
      return 'hits'
    },
  })
  return { tool, sick }
}

const call = (id: string) => ({ id, name: 'search', args: {} })

function capturingLogger() {
  const lines: Array<{ level: string; obj: object; msg: string | undefined }> = []
  const logger: Logger = {
    debug: () => {},
    info: (obj, msg) => void lines.push({ level: 'info', obj, msg }),
    warn: (obj, msg) => void lines.push({ level: 'warn', obj, msg }),
    error: (obj, msg) => void lines.push({ level: 'error', obj, msg }),
    child: () => logger,
  }
  return { logger, lines }
}

describe('state changes', () => {
  it('logs, emits and reports every state change with key, from, to and reason, in order', async () => {
    const clock = manualClock()
    const { tool, sick } = sickTool()
    const { logger, lines } = capturingLogger()
    const changes: BreakerStateChange[] = []
    const breaker = circuitBreaker({ policy: consecutive({ threshold: 2 }), cooldownMs: 1000, onStateChange: (c) => changes.push(c) })
    const stack = createStack({ middleware: [breaker], tools: [tool], clock, logger })
    await stack.dispatch(call('1'))
    const opening = await stack.dispatch(call('2'))
    expect(opening.trace.map((e) => e.type)).toEqual(['circuit-breaker.failure', 'circuit-breaker.state'])
    expect(opening.trace[1]).toMatchObject({ key: 'search', from: 'closed', to: 'open', reason: '2 consecutive failures' })
    await clock.advance(1000)
    sick.value = false
    const probe = await stack.dispatch(call('3'))
    expect(probe.trace.map((e) => (e.type === 'circuit-breaker.state' ? `${e.from}->${e.to}` : e.type))).toEqual([
      'open->half-open',
      'circuit-breaker.probe',
      'half-open->closed',
    ])

    expect(changes).toEqual([
      { key: 'search', from: 'closed', to: 'open', reason: '2 consecutive failures', at: 0, runId: 'default' },
      { key: 'search', from: 'open', to: 'half-open', reason: 'cooldown of 1000 ms elapsed', at: 1000, runId: 'default' },
      { key: 'search', from: 'half-open', to: 'closed', reason: 'probe succeeded', at: 1000, runId: 'default' },
    ])
    const logged = lines.filter((l) => l.msg === 'circuit breaker state change').map((l) => l.obj)
    expect(logged).toEqual(changes.map(({ key, from, to, reason }) => ({ key, from, to, reason })))
  })

  it('logs a throwing onStateChange once, and no outcome changes: the probe that closes the circuit still succeeds', async () => {
    const clock = manualClock()
    const sick = sickTool()
    const { logger, lines } = capturingLogger()
    let thrown = 0
    const breaker = circuitBreaker({
      policy: consecutive({ threshold: 1 }),
      cooldownMs: 1000,
      onStateChange: () => {
        thrown++
        throw new Error('dashboard is down')
      },
    })
    const stack = createStack({ middleware: [breaker], tools: [sick.tool], logger, clock })
    expect((await stack.dispatch(call('1'))).error?.code).toBe('upstream_error')
    expect((await stack.dispatch(call('2'))).error?.code).toBe('circuit_open')
    await clock.advance(1000)
    sick.sick.value = false
    expect(await stack.dispatch(call('3'))).toMatchObject({ ok: true })
    // open, half-open, closed: three throws, one line.
    expect(thrown).toBe(3)
    expect(lines.filter((l) => l.level === 'error' && l.msg?.startsWith('circuit breaker onStateChange threw'))).toHaveLength(1)
  })
})

describe('an async onStateChange that rejects', () => {
  it('is logged once like one that throws, never an unhandled rejection, on the tool and the model breaker', async () => {
    const clock = manualClock()
    const sick = sickTool()
    const { logger, lines } = capturingLogger()
    let told = 0
    // An async listener (posting to a dashboard) rejects instead of throwing.
    const onStateChange = async () => {
      told++
      throw new Error('dashboard is down')
    }
    const breaker = circuitBreaker({ policy: consecutive({ threshold: 1 }), cooldownMs: 1000, onStateChange })
    const stack = createStack({ middleware: [breaker], tools: [sick.tool], logger, clock })
    expect((await stack.dispatch(call('1'))).error?.code).toBe('upstream_error')
    await clock.advance(1000)
    sick.sick.value = false
    expect(await stack.dispatch(call('2'))).toMatchObject({ ok: true })

    const failing = { name: 'flaky', generate: async () => Promise.reject(Object.assign(new Error('503'), { status: 503 })) }
    const agent = createAgent({
      model: failing,
      tools: [],
      logger,
      modelMiddleware: [circuitBreaker({ policy: consecutive({ threshold: 1 }), onStateChange })],
    })
    expect(await agent.run({ input: 'hi' })).toMatchObject({ status: 'stopped' })
    // The rejections settle after the calls: vitest fails the file on an unhandled one.
    await new Promise((resolve) => setImmediate(resolve))
    // Tool breaker: open, half-open, closed; model breaker: open.
    expect(told).toBe(4)
    expect(lines.filter((l) => l.level === 'error' && l.msg?.startsWith('circuit breaker onStateChange threw'))).toHaveLength(2)
  })
})

describe('describeTool', () => {
  it('marks an open tool UNAVAILABLE with the seconds left, until it half-opens', async () => {
    const clock = manualClock()
    const { tool } = sickTool()
    const stack = createStack({ middleware: [circuitBreaker({ policy: consecutive({ threshold: 1 }) })], tools: [tool], clock })
    const run = createRun()
    expect(stack.describeTool(tool, run)).toBeUndefined()
    await stack.dispatch(call('1'))
    expect(stack.describeTool(tool, run)).toBe('UNAVAILABLE: circuit open, retry in 30s')
    await clock.advance(17_500)
    expect(stack.describeTool(tool, run)).toBe('UNAVAILABLE: circuit open, retry in 13s')
    await clock.advance(12_500)
    expect(stack.describeTool(tool, run)).toBeUndefined()
  })

  it('describes the tool as of a given moment on the stack clock, when one is passed', async () => {
    const clock = manualClock()
    const { tool } = sickTool()
    const stack = createStack({ middleware: [circuitBreaker({ policy: consecutive({ threshold: 1 }) })], tools: [tool], clock })
    const run = createRun()
    await stack.dispatch(call('1'))
    const openedAt = clock.now()
    expect(stack.describeTool(tool, run, openedAt + 20_000)).toBe('UNAVAILABLE: circuit open, retry in 10s')
    expect(stack.describeTool(tool, run, openedAt + 30_000)).toBeUndefined()
    // Without one, the stack's own clock: nothing moved.
    expect(stack.describeTool(tool, run)).toBe('UNAVAILABLE: circuit open, retry in 30s')
  })

  it("reads a run-scoped breaker's state from the run it is asked about", async () => {
    const { tool } = sickTool()
    const stack = createStack({ middleware: [circuitBreaker({ policy: consecutive({ threshold: 1 }), lifetime: 'run' })], tools: [tool] })
    const [sickRun, otherRun] = [createRun(), createRun()]
    await stack.dispatch(call('1'), { run: sickRun })
    expect(stack.describeTool(tool, sickRun)).toMatch(/^UNAVAILABLE: circuit open, retry in \d+s$/)
    expect(stack.describeTool(tool, otherRun)).toBeUndefined()
  })
})

describe('half-open and cooldown', () => {
  it('admits exactly halfOpenProbes concurrent probes', async () => {
    const clock = manualClock()
    let calls = 0
    const gate: Array<() => void> = []
    const tool = defineTool({
      name: 'search',
      description: '',
      input: z.object({}),
      effect: 'read',
      execute: () => {
        calls++
        if (calls === 1) throw new ToolError('timeout', 'slow')
        return new Promise<string>((resolve) => gate.push(() => resolve('hits')))
      },
    })
    const stack = createStack({
      middleware: [circuitBreaker({ policy: consecutive({ threshold: 1 }), cooldownMs: 1000, halfOpenProbes: 3 })],
      tools: [tool],
      clock,
    })
    await stack.dispatch(call('1'))
    await clock.advance(1000)
    const results = Array.from({ length: 10 }, (_, i) => stack.dispatch(call(`p${i}`)))
    await clock.advance(0)
    expect(calls).toBe(4)
    for (const open of gate) open()
    const settled = await Promise.all(results)
    expect(settled.filter((r) => r.ok)).toHaveLength(3)
  })

  it('grows the cooldown each time a probe fails, and honours a longer retryAfterMs from the failure', async () => {
    const clock = manualClock()
    const { tool } = sickTool()
    const stack = createStack({
      middleware: [circuitBreaker({ policy: consecutive({ threshold: 1 }), cooldownMs: 1000, cooldownGrowth: 2, maxCooldownMs: 3000 })],
      tools: [tool],
      clock,
    })
    await stack.dispatch(call('1'))
    const waits: Array<number | undefined> = []
    for (let i = 0; i < 3; i++) {
      const refused = await stack.dispatch(call(`r${i}`))
      waits.push(refused.error?.retryAfterMs)
      await clock.advance(refused.error?.retryAfterMs ?? 0)
      await stack.dispatch(call(`probe${i}`))
    }
    expect(waits).toEqual([1000, 2000, 3000])

    const limited = createStack({ middleware: [circuitBreaker({ policy: consecutive({ threshold: 1 }) })], tools: [rateLimited()], clock })
    await limited.dispatch({ id: 'x', name: 'quota', args: {} })
    expect((await limited.dispatch({ id: 'y', name: 'quota', args: {} })).error?.retryAfterMs).toBe(120_000)
  })
})

function rateLimited() {
  return defineTool({
    name: 'quota',
    description: '',
    input: z.object({}),
    execute: () => {
      throw new ToolError('rate_limited', '429 Too Many Requests', { retryAfterMs: 120_000 })
    },
  })
}

describe('options', () => {
  it.each([
    [{ cooldownMs: -1 }, /option cooldownMs: .*\(got -1\)/],
    [{ threshold: 3 }, /threshold/],
    [{ policy: { threshold: 3 } }, /option policy: must be consecutive/],
    [{ cooldownMs: 5000, maxCooldownMs: 1000 }, /option maxCooldownMs: must be at least cooldownMs \(5000\)/],
    [{ halfOpenProbes: 0 }, /option halfOpenProbes/],
    [{ lifetime: 'global' }, /option lifetime/],
    [{ scope: 'global' }, /option scope/],
    [{ lifetime: 'run', scope: 'stack' }, /option scope: is the deprecated name of lifetime/],
    [{ isFailure: true }, /option isFailure: must be a function/],
  ])('refuses %j with a message that names the option', (options, message) => {
    expect(() => circuitBreaker(options as never)).toThrow(OptionsError)
    expect(() => circuitBreaker(options as never)).toThrow(message)
  })

  it('checks an options object at every construction, one accepted before and changed since included', () => {
    const options = { cooldownMs: 5000 }
    circuitBreaker(options)
    options.cooldownMs = -1
    expect(() => circuitBreaker(options)).toThrow(/^circuitBreaker\(\): option cooldownMs: .*\(got -1\)$/)
    const threshold = { threshold: 2 }
    consecutive(threshold)
    threshold.threshold = 0
    expect(() => consecutive(threshold)).toThrow(/consecutive\(\): option threshold/)
    expect(() => circuitBreaker(JSON.parse('{"__proto__": {"cooldownMs": 1}}'))).toThrow(/unknown option "__proto__"/)
  })

  it('keeps one breaker per layer for layers made without options', async () => {
    const { tool } = sickTool()
    const sickStack = createStack({ tools: [tool], middleware: [circuitBreaker()] })
    const otherStack = createStack({ tools: [tool], middleware: [circuitBreaker()] })
    for (let i = 0; i < 6; i++) await sickStack.dispatch(call(`s${i}`))
    expect((await sickStack.dispatch(call('s6'))).error?.code).toBe('circuit_open')
    expect((await otherStack.dispatch(call('o1'))).error?.code).toBe('upstream_error')
  })

  it('validates policy options too', () => {
    expect(() => consecutive({ threshold: 0 })).toThrow(/consecutive\(\): option threshold/)
    expect(() => sampling({ failureRatio: 1.5 })).toThrow(/sampling\(\): option failureRatio/)
    expect(() => sampling({ windowMs: 5, buckets: 10 })).toThrow(/option windowMs: must be at least buckets/)
  })
})
