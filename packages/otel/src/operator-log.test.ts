import { Writable } from 'node:stream'
import type { RunOutcome } from '@shallot/agent'
import type { Logger } from '@shallot/core'
import { manualClock, seededRandom } from '@shallot/testing'
import pino from 'pino'
import { consecutive, createAgent, defaultMiddleware, defaultModelMiddleware } from 'shallot'
import { expect, it } from 'vitest'
import { storyModel, storyTools } from '../test/world.js'
import { operatorLog } from './index.js'

type Line = Record<string, unknown> & { level: number; msg: string }

function capture() {
  const lines: Line[] = []
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const text of String(chunk).split('\n')) if (text !== '') lines.push(JSON.parse(text) as Line)
      done()
    },
  })
  return { lines, logger: pino({ level: 'debug', base: null, timestamp: false }, stream) }
}

async function runStory(logger: Logger, input = 'refund ORD-2026-00042 for bob@example.com, password=hunter2') {
  const clock = manualClock()
  const { tools } = storyTools(clock)
  const log = operatorLog(logger, { secrets: ['hunter2'], limits: { maxTurns: 30, maxSteps: 80 } })
  const agent = log.agent(
    createAgent({
      model: log.model(storyModel(), clock),
      tools,
      clock,
      random: seededRandom(2026),
      middleware: [
        log.middleware,
        ...defaultMiddleware({ timeout: { ms: 2_000 }, circuitBreaker: { policy: consecutive({ threshold: 2 }), cooldownMs: 30_000 } }),
      ],
      limits: { maxTurns: 30, maxSteps: 80 },
      modelMiddleware: defaultModelMiddleware({ retry: { baseMs: 10 } }),
    }),
  )
  let outcome: RunOutcome | undefined
  const pending = agent.run({ runId: 'demo-1', input }).then((o) => {
    outcome = o
    return o
  })
  while (outcome === undefined) await clock.runAll()
  return pending
}

const INFO = 30
const WARN = 40

it('logs run started with the task sanitized and the limits', async () => {
  const { lines, logger } = capture()
  await runStory(logger)
  expect(lines[0]).toEqual({
    level: INFO,
    runId: 'demo-1',
    task: 'refund ORD-2026-00042 for [redacted], password=[redacted]',
    limits: { maxTurns: 30, maxSteps: 80 },
    msg: 'run started',
  })
})

it('logs each model call with latency, attempt, tokens and finish reason; a failed attempt as a warning', async () => {
  const { lines, logger } = capture()
  await runStory(logger)
  const model = lines.filter((l) => l.msg === 'model call' || l.msg === 'model call failed')
  expect(model).toHaveLength(16)
  expect(model[0]).toMatchObject({ level: WARN, runId: 'demo-1', attempt: 1, errorType: '503', latencyMs: 0 })
  expect(String(model[0]?.message)).not.toMatch(/sk-live|10\.0\.0\.7/)
  expect(model[1]).toEqual({
    level: INFO,
    runId: 'demo-1',
    latencyMs: 0,
    attempt: 2,
    inputTokens: 100,
    outputTokens: 20,
    finishReason: 'tool_calls',
    toolCalls: 1,
    msg: 'model call',
  })
  expect(model[2]).toMatchObject({ attempt: 1, inputTokens: 300 })
})

it("logs each soft error at info with its sanitized message, and never the tool's secret", async () => {
  const { lines, logger } = capture()
  await runStory(logger)
  const soft = lines.filter((l) => l.msg.startsWith('tool call failed'))
  expect(soft.map((l) => [l.tool, l.code])).toEqual([
    ['read_file', 'not_found'],
    ['charge_card', 'timeout'],
    ['charge_card', 'outcome_unknown'],
    ['status_page', 'timeout'],
    // Its two timed-out attempts opened the circuit (a failed call counts once per request, decision 407).
    ['status_page', 'circuit_open'],
    ['read_file', 'not_found'],
    ['read_file', 'not_found'],
    ['read_file', 'repeated_failure'],
    ['read_file', 'repeated_failure'],
  ])
  expect(soft.every((l) => l.level === INFO)).toBe(true)
  expect(soft[0]).toMatchObject({
    runId: 'demo-1',
    turn: 1,
    callId: 'call_1_1',
    category: 'recoverable',
    attempts: 1,
    message: 'file src/mian.rs not found (password=[redacted] at [redacted]/proj)',
    hint: 'files: src/main.rs',
  })
  expect(JSON.stringify(lines)).not.toMatch(/hunter2|alice|bob@example/)
})

it('logs run finished with token, model-call and step totals', async () => {
  const { lines, logger } = capture()
  const outcome = await runStory(logger)
  expect(lines.at(-1)).toEqual({
    level: WARN,
    runId: 'demo-1',
    status: 'stopped',
    turns: 14,
    steps: outcome.steps,
    modelCalls: 15,
    modelAttempts: 16,
    inputTokens: 22_500,
    outputTokens: 300,
    durationMs: expect.any(Number),
    kind: 'loop_detected',
    message: expect.stringContaining('read_file'),
    msg: 'run finished',
  })
})

it('a logger that throws on every line changes nothing about the run', async () => {
  const broken: Logger = {
    debug: () => {
      throw new Error('disk full')
    },
    info: () => {
      throw new Error('disk full')
    },
    warn: () => {
      throw new Error('disk full')
    },
    error: () => {
      throw new Error('disk full')
    },
    child: () => broken,
  }
  const outcome = await runStory(broken)
  expect(outcome).toMatchObject({ status: 'stopped', turns: 14 })
})

it('refuses a bad logger and bad options, naming them', () => {
  expect(() => operatorLog({} as Logger)).toThrow(/operatorLog\(\): logger must be a pino logger/)
  const { logger } = capture()
  expect(() => operatorLog(logger, { maxTaskChars: -1 })).toThrow(/maxTaskChars/)
  expect(() => operatorLog(logger, { colour: true } as never)).toThrow(/colour/)
})

it('keeps the totals of two concurrent runs that share one model apart', async () => {
  const { lines, logger } = capture()
  const clock = manualClock()
  const log = operatorLog(logger)
  let calls = 0
  const model = log.model(
    {
      async generate(request) {
        const mine = ++calls
        await clock.sleep(mine === 1 ? 100 : 10)
        return { text: 'done', usage: { inputTokens: request.messages.length * 7, outputTokens: mine }, finishReason: 'stop' }
      },
    },
    clock,
  )
  const agent = log.agent(createAgent({ model, tools: [], clock }))
  const both = Promise.all([agent.run({ runId: 'a', input: 'one' }), agent.run({ runId: 'b', input: 'two' })])
  await clock.runAll()
  await both
  const finished = Object.fromEntries(lines.filter((l) => l.msg === 'run finished').map((l) => [l.runId, l]))
  expect(finished.a).toMatchObject({ modelCalls: 1, inputTokens: 7, outputTokens: 1, durationMs: 100 })
  expect(finished.b).toMatchObject({ modelCalls: 1, inputTokens: 7, outputTokens: 2, durationMs: 10 })
  const modelLines = lines.filter((l) => l.msg === 'model call').map((l) => [l.runId, l.latencyMs])
  expect(modelLines).toEqual([
    ['b', 10],
    ['a', 100],
  ])
})

it('with the agent’s own logger, core writes each line once and operatorLog adds none', async () => {
  const { lines, logger } = capture()
  const clock = manualClock()
  const { tools } = storyTools(clock)
  const log = operatorLog(logger, { secrets: ['hunter2'] })
  // The wiring of operatorLog's old README, plus the logger on the agent: nothing may be written twice.
  const agent = log.agent(
    createAgent({
      model: log.model(storyModel(), clock),
      tools,
      clock,
      logger,
      random: seededRandom(2026),
      middleware: [
        log.middleware,
        ...defaultMiddleware({ timeout: { ms: 2_000 }, circuitBreaker: { policy: consecutive({ threshold: 2 }), cooldownMs: 30_000 } }),
      ],
      limits: { maxTurns: 30, maxSteps: 80 },
      modelMiddleware: defaultModelMiddleware({ retry: { baseMs: 10 } }),
    }),
  )
  let outcome: RunOutcome | undefined
  const pending = agent.run({ runId: 'demo-1', input: 'refund ORD-2026-00042 for bob@example.com' }).then((o) => {
    outcome = o
    return o
  })
  while (outcome === undefined) await clock.runAll()
  const { steps } = await pending
  const named = (msg: string) => lines.filter((l) => l.msg === msg)
  // operatorLog's own lines are gone; core's are there once each.
  for (const msg of ['run finished', 'model call failed', 'tool call failed (soft error, the model reads it)'])
    expect(named(msg)).toEqual([])
  expect(named('run started')).toEqual([
    expect.objectContaining({
      level: INFO,
      runId: 'demo-1',
      task: 'refund ORD-2026-00042 for [redacted]',
      limits: expect.objectContaining({ maxTurns: 30, maxSteps: 80 }),
    }),
  ])
  const models = named('model call')
  expect(models).toHaveLength(15)
  expect(models[0]).toEqual({
    level: INFO,
    runId: 'demo-1',
    model: 'model',
    attempt: 2,
    latencyMs: 0,
    inputTokens: 100,
    outputTokens: 20,
    finishReason: 'tool_calls',
    toolCalls: 1,
    msg: 'model call',
  })
  const retried = named('model call failed; retrying')
  // The default model stack's classifier names the 503 (its text keeps the status).
  expect(retried).toEqual([
    expect.objectContaining({ level: WARN, attempt: 1, code: 'upstream_error', error: expect.stringContaining('503') }),
  ])
  expect(String(retried[0]?.error)).not.toMatch(/sk-live|10\.0\.0\.7/)
  const soft = lines.filter((l) => l.msg === 'tool call' && l.outcome === 'soft_error')
  expect(soft.map((l) => [l.tool, l.code])).toEqual([
    ['read_file', 'not_found'],
    ['charge_card', 'timeout'],
    ['charge_card', 'outcome_unknown'],
    ['status_page', 'timeout'],
    // Its two timed-out attempts opened the circuit (a failed call counts once per request, decision 407).
    ['status_page', 'circuit_open'],
    ['read_file', 'not_found'],
    ['read_file', 'not_found'],
    ['read_file', 'repeated_failure'],
    ['read_file', 'repeated_failure'],
  ])
  expect(soft.every((l) => l.level === INFO)).toBe(true)
  expect(soft[0]).toMatchObject({ runId: 'demo-1', turn: 1, category: 'recoverable', attempts: 1 })
  expect(String(soft[0]?.message)).toMatch(/^file src\/mian\.rs not found/)
  expect(named('run completed')).toEqual([])
  expect(named('run stopped')).toEqual([
    expect.objectContaining({
      level: WARN,
      runId: 'demo-1',
      outcome: 'stopped',
      kind: 'loop_detected',
      turns: 14,
      steps,
      inputTokens: 22_500,
      outputTokens: 300,
    }),
  ])
  expect(JSON.stringify(lines)).not.toMatch(/bob@example|hunter2|alice|sk-live-abcdefghijklmnop1234|10\.0\.0\.7/)
})
