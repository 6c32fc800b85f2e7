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
