import { AsyncLocalStorage } from 'node:async_hooks'
import { type Clock, defineTool, type Logger, type ModelAdapter, type ModelMiddleware, type ModelResponse, ToolError } from '@shallot/core'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { type AgentEvent, type AgentScope, createAgent, memoryCheckpoints } from './index.js'

/** Virtual time: a sleep returns at once and moves `now` by its length. */
function virtualClock(): Clock & { advance(ms: number): void } {
  let now = 0
  return {
    now: () => now,
    advance(ms) {
      now += ms
    },
    async sleep(ms, signal) {
      if (signal?.aborted) throw signal.reason
      now += ms
    },
    timer: () => () => {},
  }
}

/** A model that plays `steps` in order, each taking 40 ms of the clock. */
function scripted(name: string, clock: ReturnType<typeof virtualClock>, steps: Array<ModelResponse | Error>): ModelAdapter {
  let i = 0
  return {
    name,
    async generate() {
      clock.advance(40)
      const step = steps[i++] ?? { text: 'out of script' }
      if (step instanceof Error) throw step
      return step
    },
  }
}

/** A pino-shaped logger that records info lines as [msg, fields]. */
function recordingLogger() {
  const lines: Array<[string, Record<string, unknown>]> = []
  const logger: Logger = {
    debug() {},
    info(fields: unknown, msg?: string) {
      lines.push([msg ?? '', fields as Record<string, unknown>])
    },
    warn(fields: unknown, msg?: string) {
      lines.push([msg ?? '', fields as Record<string, unknown>])
    },
    error() {},
    child() {
      return logger
    },
  } as unknown as Logger
  return { logger, lines }
}

const read = defineTool({
  name: 'read_file',
  description: 'Read a file',
  input: z.object({ path: z.string() }),
  effect: 'read',
  execute: ({ path }) => `contents of ${path}`,
})

const toolCall = (id: string): ModelResponse => ({
  toolCalls: [{ id, name: 'read_file', args: { path: 'a.txt' } }],
  usage: { inputTokens: 100, outputTokens: 20 },
  finishReason: 'tool_calls',
})

/** A model layer that repeats a failed call once and tells it, as a retry layer does (core asks once per call). */
const repeatOnce: ModelMiddleware = async (ctx, next) => {
  try {
    await next()
  } catch (err) {
    const error = err instanceof Error ? err.message : String(err)
    ctx.emit({
      type: 'model.retry',
      at: ctx.clock.now(),
      runId: ctx.run.id,
      turn: ctx.turn,
      model: ctx.model.name,
      attempt: ctx.attempt,
      delayMs: 0,
      error,
    })
    ctx.attempt++
    await next()
  }
}

describe('the agent event stream', () => {
  it('frames a run with run.started and run.finished, one model.call per attempt with latency and tokens', async () => {
    const clock = virtualClock()
    const events: AgentEvent[] = []
    const flaky = Object.assign(new Error('overloaded'), { status: 529 })
    const model = scripted('gpt', clock, [
      toolCall('c1'),
      flaky,
      { text: 'done', usage: { inputTokens: 150, outputTokens: 5 }, finishReason: 'stop' },
    ])
    const agent = createAgent({
      model,
      tools: [read],
      clock,
      random: () => 0,
      limits: { maxTurns: 5 },
      modelMiddleware: repeatOnce,
      onEvent: (e) => events.push(e),
    })
    const outcome = await agent.run({ input: 'read a.txt', runId: 'r1' })
    expect(outcome.status).toBe('completed')
    expect(events.map((e) => e.type)).toEqual(['run.started', 'model.call', 'model.call', 'model.retry', 'model.call', 'run.finished'])
    expect(events[0]).toMatchObject({ type: 'run.started', at: 0, runId: 'r1', turn: 0, resumed: false, limits: { maxTurns: 5 } })
    expect(events[1]).toEqual({
      type: 'model.call',
      at: 40,
      runId: 'r1',
      turn: 1,
      model: 'gpt',
      attempt: 1,
      durationMs: 40,
      usage: { inputTokens: 100, outputTokens: 20 },
      finishReason: 'tool_calls',
      toolCalls: 1,
    })
    expect(events[2]).toMatchObject({
      type: 'model.call',
      turn: 2,
      attempt: 1,
      toolCalls: 0,
      error: expect.stringMatching(/^529 /),
      code: '529',
    })
    expect(events[2]).not.toHaveProperty('usage')
    expect(events[4]).toMatchObject({ type: 'model.call', turn: 2, attempt: 2, usage: { inputTokens: 150, outputTokens: 5 } })
    const finished = events[5]
    expect(finished).toMatchObject({
      type: 'run.finished',
      runId: 'r1',
      status: 'completed',
      turns: 2,
      usage: { inputTokens: 250, outputTokens: 25, costUsd: 0 },
    })
    expect(finished?.type === 'run.finished' && finished.durationMs).toBe(clock.now())
    expect(finished).not.toHaveProperty('kind')
  })

  it('ends a stopped run with run.finished naming the kind, and marks a resumed run', async () => {
    const clock = virtualClock()
    const events: AgentEvent[] = []
    const checkpoints = memoryCheckpoints()
    const fatal = defineTool({
      name: 'deploy',
      description: 'Deploy',
      input: z.object({}),
      effect: 'write',
      execute: () => {
        throw new ToolError('permission_denied', 'no deploy rights', { category: 'fatal' })
      },
    })
    const model = scripted('gpt', clock, [
      toolCall('c1'),
      { toolCalls: [{ id: 'c2', name: 'deploy', args: {} }], usage: { inputTokens: 10, outputTokens: 1 } },
      { text: 'resumed and done' },
    ])
    const agent = createAgent({ model, tools: [read, fatal], clock, checkpoints, onEvent: (e) => events.push(e) })
    const stopped = await agent.run({ input: 'deploy', runId: 'r2' })
    expect(stopped.status).toBe('stopped')
    expect(events.at(-1)).toMatchObject({
      type: 'run.finished',
      status: 'stopped',
      kind: 'fatal',
      turns: 1,
      usage: { inputTokens: 110, outputTokens: 21 },
    })
    events.length = 0
    const resumed = await agent.resume('r2')
    expect(resumed.status).toBe('completed')
    expect(events[0]).toMatchObject({ type: 'run.started', runId: 'r2', turn: 1, resumed: true })
    expect(events.at(-1)).toMatchObject({ type: 'run.finished', status: 'completed', turns: 2 })
  })

  it('writes the operator lines: run started with the task sanitized, a model call line, totals on run completed', async () => {
    const clock = virtualClock()
    const { logger, lines } = recordingLogger()
    const model = scripted('gpt', clock, [
      toolCall('c1'),
      { text: 'done', usage: { inputTokens: 7, outputTokens: 3 }, finishReason: 'stop' },
    ])
    const agent = createAgent({ model, tools: [read], clock, logger })
    const task = `deploy with token ghp_${'a'.repeat(36)} ${'x'.repeat(2000)}`
    await agent.run({ input: task })
    const [, started] = lines.find(([msg]) => msg === 'run started') ?? []
    expect(String(started?.task)).not.toContain('ghp_aaaa')
    expect(String(started?.task).length).toBeLessThanOrEqual(600)
    expect(started?.limits).toMatchObject({ maxTurns: 20 })
    const models = lines.filter(([msg]) => msg === 'model call').map(([, fields]) => fields)
    expect(models).toEqual([
      { model: 'gpt', attempt: 1, latencyMs: 40, inputTokens: 100, outputTokens: 20, finishReason: 'tool_calls', toolCalls: 1 },
      { model: 'gpt', attempt: 1, latencyMs: 40, inputTokens: 7, outputTokens: 3, finishReason: 'stop', toolCalls: 0 },
    ])
    const [, completed] = lines.find(([msg]) => msg === 'run completed') ?? []
    expect(completed).toMatchObject({ turns: 2, inputTokens: 107, outputTokens: 23 })
  })

  it('a listener that throws on run.started changes nothing: the run completes and later events still arrive', async () => {
    const clock = virtualClock()
    const seen: string[] = []
    const model = scripted('gpt', clock, [{ text: 'fine' }])
    const agent = createAgent({
      model,
      tools: [read],
      clock,
      onEvent: (e) => {
        seen.push(e.type)
        if (e.type === 'run.started') throw new TypeError('listener bug')
      },
    })
    expect(await agent.run({ input: 'x' })).toMatchObject({ status: 'completed', output: 'fine' })
    expect(seen).toEqual(['run.started', 'model.call', 'run.finished'])
  })

  it("runs each run and each model attempt inside the listener's within, so the model and the tools see its context", async () => {
    const clock = virtualClock()
    const store = new AsyncLocalStorage<string>()
    const seen: string[] = []
    const scopes: AgentScope[] = []
    const echo = defineTool({
      name: 'read_file',
      description: 'Read a file',
      input: z.object({ path: z.string() }),
      effect: 'read',
      execute: () => {
        seen.push(`tool in ${store.getStore()}`)
        return 'ok'
      },
    })
    const inner = scripted('gpt', clock, [toolCall('c1'), { text: 'done' }])
    const model: ModelAdapter = {
      name: 'gpt',
      provider: 'openai.chat',
      generate(request) {
        seen.push(`model in ${store.getStore()}`)
        return inner.generate(request)
      },
    }
    const onEvent = Object.assign((e: AgentEvent) => seen.push(`${e.type} in ${store.getStore()}`), {
      within<T>(scope: AgentScope, fn: () => T): T {
        scopes.push(scope)
        return store.run(scope.type === 'run' ? scope.runId : `${store.getStore()}/${scope.model}#${scope.attempt}`, fn)
      },
    })
    const agent = createAgent({ model, tools: [echo], clock, onEvent })
    expect(await agent.run({ input: 'x', runId: 'r1' })).toMatchObject({ status: 'completed' })
    expect(seen).toEqual([
      'run.started in r1',
      'model in r1/gpt#1',
      'model.call in r1',
      'tool in r1',
      'model in r1/gpt#1',
      'model.call in r1',
      'run.finished in r1',
    ])
    expect(scopes).toEqual([
      { type: 'run', at: 0, runId: 'r1' },
      { type: 'model.call', at: 0, runId: 'r1', turn: 1, model: 'gpt', provider: 'openai.chat', attempt: 1 },
      { type: 'model.call', at: 40, runId: 'r1', turn: 2, model: 'gpt', provider: 'openai.chat', attempt: 1 },
    ])
  })

  it('a within that throws, never calls fn or calls it twice costs its context only: each attempt runs once, logged once', async () => {
    const cases: Array<[(scope: AgentScope, fn: () => unknown) => unknown, number]> = [
      [
        () => {
          throw new Error('tracer down')
        },
        1,
      ],
      [() => undefined, 0],
      [
        (_scope, fn) => {
          fn()
          fn()
          throw new Error('after the fact')
        },
        1,
      ],
    ]
    for (const [within, logged] of cases) {
      const clock = virtualClock()
      const errors: string[] = []
      const { logger } = recordingLogger()
      const calls: string[] = []
      const inner = scripted('gpt', clock, [toolCall('c1'), { text: 'done' }])
      const model: ModelAdapter = {
        name: 'gpt',
        generate(request) {
          calls.push('model')
          return inner.generate(request)
        },
      }
      const agent = createAgent({
        model,
        tools: [read],
        clock,
        logger: { ...logger, error: (_f: unknown, msg?: string) => errors.push(msg ?? '') } as Logger,
        onEvent: Object.assign(() => {}, { within: within as <T>(scope: AgentScope, fn: () => T) => T }),
      })
      expect(await agent.run({ input: 'x' })).toMatchObject({ status: 'completed', output: 'done', turns: 2 })
      expect(calls).toEqual(['model', 'model'])
      // Logged once per agent, not once per run and attempt.
      expect(errors.filter((m) => m.includes('within threw'))).toHaveLength(logged)
    }
  })

  it('refuses a within that is not a function, naming it', () => {
    const model = { generate: async () => ({ text: 'x' }) }
    expect(() => createAgent({ model, tools: [read], onEvent: Object.assign(() => {}, { within: 42 }) as never })).toThrow(
      /onEvent\.within: must be a function/,
    )
  })
})
