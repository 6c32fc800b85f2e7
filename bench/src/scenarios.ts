import { createAgent } from '@shallot/agent'
import { type ModelAdapter, sanitize } from '@shallot/core'
import { createSanitizer } from '@shallot/core/kit'
import { classify } from '@shallot/error-classifier'
import { circuitBreaker, defaultMiddleware, errorClassifier, idempotency, panicCatcher, retry, stuckLoop, timeout } from 'shallot'
import { countingTool, distinctCall, flakyTool, nullPino, readTool, stackOf, writeTool } from './fixtures.js'
import { type Case, type Row, time } from './measure.js'
import { cockatielTrio, floor, koaSevenAsync, opossumWithTimeout } from './peers.js'

/** The floor and the peers, measured in the same rounds as shallot's rows so ratios compare like with like. */
export function peerCases(): Case[] {
  return [
    { name: 'bare await', fn: floor },
    { name: KOA, fn: koaSevenAsync() },
    { name: 'opossum + timeout', fn: opossumWithTimeout() },
    { name: COCKATIEL, fn: cockatielTrio() },
  ]
}

/** The row names the targets table reads. */
export const KOA = 'koa-compose 7 async no-op'
export const COCKATIEL = 'cockatiel retry+breaker+timeout'
export const READ = 'shallot: 7 layers, read'
export const READ_SIGNAL = 'shallot: 7 layers, read, dispatch(call, { signal })'
export const WRITE = 'shallot: 7 layers, write (distinct args)'
export const AGENT = 'createAgent run: one tool call, then the answer'
export const AGENT_LONG = 'createAgent run: eleven tool turns, then the answer'
export const AGENT_SIGNAL = "createAgent run with the caller's signal: one tool call, then the answer"
/** Tool turns in {@link AGENT_LONG}'s runs: the cost of a turn is the difference to {@link AGENT}'s, over ten. */
export const LONG_TURNS = 11

/** Runs `calls` first so a broken row fails loudly instead of timing the wrong thing. */
async function checked(name: string, fn: () => Promise<unknown>, check: () => void): Promise<Case> {
  for (let i = 0; i < 200; i++) await fn()
  check()
  return { name, fn }
}

/** 1–3 and 5: the full default stack on the happy path (read, read with a signal, write, pino) and with one failure retried. */
export async function fullStackCases(): Promise<Case[]> {
  const read = stackOf(defaultMiddleware(), [readTool])
  // Counted in the tool, not with a stack.on() listener (a listener makes every call build its call.*
  // events) nor with a reaction on each result (the read row has none): this row measures a write, not a
  // write with an observer. A replayed call does not run the tool, so every call ran it exactly when none replayed.
  let writes = 0
  const counted = countingTool(writeTool, () => writes++)
  const write = stackOf(defaultMiddleware(), [counted])
  const logged = stackOf(defaultMiddleware(), [readTool], { logger: nullPino() })
  // A zero delay on the system clock: the retry really happens (the tool runs twice) and costs only its bookkeeping.
  // No retry budget: at one failure in two calls the default bucket would run dry and the row would stop retrying.
  const failing = stackOf(defaultMiddleware({ retry: { backoff: 'constant', baseMs: 0, retryBudget: false } }), [flakyTool()])
  const signal = new AbortController().signal
  let retried = 0
  let failed = 0
  failing.on((event) => {
    if (event.type === 'retry.scheduled') retried++
  })
  const okOrCount = (result: { ok: boolean }) => {
    if (!result.ok) failed++
  }
  return [
    await checked(
      READ,
      () => read.dispatch(distinctCall('lookup')),
      () => {},
    ),
    await checked(
      READ_SIGNAL,
      () => read.dispatch(distinctCall('lookup'), { signal }),
      () => {},
    ),
    await checked(
      WRITE,
      () => write.dispatch(distinctCall('record')),
      () => {
        if (writes !== 200)
          throw new Error(`the write row ran the tool for ${writes} of 200 calls: the others replayed, its arguments are not distinct`)
      },
    ),
    await checked(
      'shallot: 7 layers, pino to null',
      () => logged.dispatch(distinctCall('lookup')),
      () => {},
    ),
    await checked(
      'shallot: fail once, retry',
      () => failing.dispatch(distinctCall('flaky')).then(okOrCount),
      () => {
        if (retried !== 200 || failed !== 0)
          throw new Error(`the retry row retried ${retried} of 200 calls and failed ${failed}: it does not measure a retry`)
      },
    ),
  ]
}

/**
 * A model that asks for `turns` tool calls, one per turn, each with fresh arguments, then answers:
 * one agent run is `turns + 1` turns.
 */
function toolTurnsModel(turns: number): ModelAdapter {
  let serial = 0
  return {
    generate: async ({ messages }) => {
      // The user's message, then an assistant message and its tool result per turn so far.
      if (messages.length >= 1 + 2 * turns) return { text: 'done' }
      return { toolCalls: [{ id: `t${serial}`, name: 'lookup', args: { id: serial++ } }] }
    },
  }
}

/** The agent loop: a run whose one tool call goes through the full default stack. */
export async function agentCase(toolTurns = 1, signal?: AbortSignal): Promise<Case> {
  const agent = createAgent({ model: toolTurnsModel(toolTurns), tools: [readTool], middleware: defaultMiddleware() })
  let incomplete = 0
  const name =
    signal !== undefined
      ? AGENT_SIGNAL
      : toolTurns === 1
        ? AGENT
        : toolTurns === LONG_TURNS
          ? AGENT_LONG
          : `createAgent run: ${toolTurns} tool turns, then the answer`
  const options = signal === undefined ? { input: 'look it up' } : { input: 'look it up', signal }
  return checked(
    name,
    () =>
      agent.run(options).then((outcome) => {
        if (outcome.status !== 'completed' || outcome.turns !== toolTurns + 1 || outcome.steps !== 2 * toolTurns + 1) incomplete++
      }),
    () => {
      if (incomplete > 0) throw new Error(`${incomplete} agent runs did not complete in ${toolTurns + 1} turns`)
    },
  )
}

/** 4: each middleware alone in front of the read tool (idempotency in front of the write tool). */
export function eachLayerCases(): Case[] {
  const layers = {
    'no layers (dispatcher only)': [],
    'panic-catcher': [panicCatcher()],
    'stuck-loop': [stuckLoop()],
    'idempotency (write)': [idempotency()],
    'circuit-breaker': [circuitBreaker().wrapToolCall],
    retry: [retry()],
    'error-classifier': [errorClassifier()],
    timeout: [timeout({ ms: 5_000 })],
  }
  return Object.entries(layers).map(([name, middleware]) => {
    const tool = name.startsWith('idempotency') ? writeTool : readTool
    const stack = stackOf(middleware, [tool])
    return { name: `shallot: ${name}`, fn: () => stack.dispatch(distinctCall(tool.name)) }
  })
}

/** 8: the classifier on 100 KB of pathological text. */
export async function classifierPathological(): Promise<Row[]> {
  const inputs: Record<string, string> = {
    "'a' × 100 KB": 'a'.repeat(100_000),
    "'/home/' × 16k": '/home/'.repeat(16_667),
    "'sk-' × 33k": 'sk-'.repeat(33_333),
    "'@' × 100k + '://'": `${'@'.repeat(100_000)}://`,
    "'1.' × 50k (IP-like)": '1.'.repeat(50_000),
  }
  const rows: Row[] = []
  for (const [name, message] of Object.entries(inputs)) {
    const error = Object.assign(new Error(message), { status: 500 })
    rows.push(await time(`classify ${name}`, () => classify(error)))
  }
  return rows
}

/**
 * 9: core's sanitizer, the one every text the model reads goes through, on 100 KB of pathological
 * text with no cap to hide behind (the cap would cut the input to ~2 KB before any pattern runs).
 * Target: each row well under 5 ms.
 */
export async function sanitizerPathological(): Promise<Row[]> {
  const inputs: Record<string, string> = {
    "'a' × 100 KB": 'a'.repeat(100_000),
    "'/home/' × 16k": '/home/'.repeat(16_667),
    "'sk-' × 33k": 'sk-'.repeat(33_333),
    "'@' × 100k + '://'": `${'@'.repeat(100_000)}://`,
    "'eyJ' × 33k": 'eyJ'.repeat(33_333),
    "'10.0.0.1 ' × 11k": '10.0.0.1 '.repeat(11_111),
    "'a@' × 50k (e-mail-like)": 'a@'.repeat(50_000),
    "'a.' × 50k": 'a.'.repeat(50_000),
    "'fd00:' × 20k": 'fd00:'.repeat(20_000),
    "'U+200B' × 100k": '\u200B'.repeat(100_000),
    '100 KB of log lines with secrets': 'GET /v1/orders 200 user=ann@example.com from 10.0.0.5 Bearer Zm9vYmFyYmF6cXV4MTIzNDU2\n'.repeat(
      1_150,
    ),
  }
  const rows: Row[] = []
  for (const [name, text] of Object.entries(inputs)) rows.push(await time(`sanitize ${name}`, () => sanitize(text)))
  // What a successful output costs the stack at the default 20,000-character cap.
  const output = createSanitizer({ secrets: ['tenant-9f31c', /acct_[0-9]{8}/] })
  const page = 'order ORD-2026-00042 shipped to Lyon, 3 items, total 42.00 EUR; '.repeat(320)
  rows.push(await time('output 20k chars, invisible stripped', () => output.output(page, 20_000, false)))
  rows.push(await time('output 20k chars, redactOutput', () => output.output(page, 20_000, true)))
  return rows
}
