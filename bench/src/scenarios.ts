import { createSanitizer, sanitize } from '@shallot/core'
import { classify } from '@shallot/error-classifier'
import { circuitBreaker, defaultMiddleware, errorClassifier, idempotency, panicCatcher, retry, stuckLoop, timeout } from 'shallot'
import { flakyTool, nullPino, readTool, stackOf, writeTool, zeroClock } from './fixtures.js'
import { type Row, time } from './measure.js'
import { cockatielTrio, floor, koaSevenNoop, opossumWithTimeout } from './peers.js'

/** The floor and the peers, measured in every scenario's run so ratios compare like with like. */
export async function peers(): Promise<Row[]> {
  const koa = koaSevenNoop()
  const cockatiel = cockatielTrio()
  const opossum = opossumWithTimeout()
  return [
    await time('bare await', floor),
    await time('koa-compose 7 no-op', koa),
    await time('opossum + timeout', opossum),
    await time('cockatiel retry+breaker+timeout', cockatiel),
  ]
}

let n = 0
const call = (name: string) => ({ id: 'c', name, args: { id: n++ % 1000 } })

/** 1–3 and 5: the full default stack on the happy path, with a write, with pino, and with one failure. */
export async function fullStack(): Promise<Row[]> {
  const read = stackOf(defaultMiddleware(), [readTool])
  const write = stackOf(defaultMiddleware(), [writeTool])
  const logged = stackOf(defaultMiddleware(), [readTool], { logger: nullPino() })
  const failing = stackOf(defaultMiddleware({ retry: { backoff: 'none' } }), [flakyTool()], { clock: zeroClock })
  return [
    await time('shallot: 7 layers, read', () => read.dispatch(call('lookup'))),
    await time('shallot: 7 layers, write', () => write.dispatch(call('record'))),
    await time('shallot: 7 layers, pino to null', () => logged.dispatch(call('lookup'))),
    await time('shallot: fail once, retry', () => failing.dispatch(call('flaky'))),
  ]
}

/** 4: each middleware alone in front of the read tool. */
export async function eachLayer(): Promise<Row[]> {
  const layers = {
    'no layers (dispatcher only)': [],
    'panic-catcher': [panicCatcher()],
    'stuck-loop': [stuckLoop()],
    'idempotency (write)': [idempotency()],
    'circuit-breaker': [circuitBreaker()],
    retry: [retry()],
    'error-classifier': [errorClassifier()],
    timeout: [timeout({ ms: 5_000 })],
  }
  const rows: Row[] = []
  for (const [name, middleware] of Object.entries(layers)) {
    const tool = name.startsWith('idempotency') ? writeTool : readTool
    const stack = stackOf(middleware, [tool])
    rows.push(await time(`shallot: ${name}`, () => stack.dispatch(call(tool.name))))
  }
  return rows
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
