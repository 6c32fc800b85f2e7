import { manualClock } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import {
  consecutive,
  createAgent,
  createRun,
  createStack,
  defaultMiddleware,
  defineTool,
  type Logger,
  type ModelAdapter,
  ToolError,
} from './index.js'

function capturingLogger(throwing: readonly string[] = []) {
  const lines: Array<{ level: string; obj: Record<string, unknown>; msg: string | undefined }> = []
  const at =
    (level: string) =>
    (obj: object, msg?: string): void => {
      if (throwing.includes(level)) throw new Error(`${level} transport down`)
      lines.push({ level, obj: obj as Record<string, unknown>, msg })
    }
  const logger: Logger = {
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    child: () => {
      if (throwing.includes('child')) throw new Error('child bindings refused')
      return logger
    },
  }
  return { logger, lines }
}

describe('a retryAfterMs that is not a number of milliseconds', () => {
  for (const [label, value] of [
    ["Number('soon') * 1000", Number('soon') * 1000],
    ['Infinity', Number.POSITIVE_INFINITY],
    ['-5000', -5000],
  ] as const) {
    it(`is dropped with a log line (${label}), so the breaker opens after 2 failures and nobody reads NaN`, async () => {
      let executions = 0
      const charge = defineTool({
        name: 'charge_card',
        description: 'Charges a card',
        input: z.object({ order: z.number() }),
        effect: 'write',
        execute: () => {
          executions++
          throw new ToolError('rate_limited', 'the payment provider is busy', { retryAfterMs: value })
        },
      })
      const { logger, lines } = capturingLogger()
      const stack = createStack({
        middleware: defaultMiddleware({ circuitBreaker: { policy: consecutive({ threshold: 2 }) } }),
        tools: [charge],
        clock: manualClock(),
        logger,
      })
      const codes: string[] = []
      const texts: string[] = []
      for (let order = 1; order <= 5; order++) {
        const result = await stack.dispatch({ id: `c${order}`, name: 'charge_card', args: { order } })
        codes.push(result.error?.code ?? 'ok')
        texts.push(result.content, JSON.stringify(result.error))
      }
      texts.push(stack.describeTool(charge, createRun()) ?? '')
      expect(executions).toBe(2)
      expect(codes).toEqual(['rate_limited', 'rate_limited', 'circuit_open', 'circuit_open', 'circuit_open'])
      for (const text of texts) expect(text).not.toMatch(/NaN|Infinity|null|-5/)
      const dropped = lines.filter((l) => l.level === 'warn' && l.msg?.includes('dropped the retryAfterMs'))
      expect(dropped.map((l) => l.obj)).toEqual([
        { code: 'rate_limited', retryAfterMs: String(value) },
        { code: 'rate_limited', retryAfterMs: String(value) },
      ])
    })
  }
})

describe('listeners that throw, with the default stack', () => {
  const ok = defineTool({
    name: 'search',
    description: '',
    input: z.object({ q: z.string() }),
    effect: 'read',
    execute: ({ q }) => `hits for ${q}`,
  })
  const missing = defineTool({
    name: 'read_file',
    description: '',
    input: z.object({ path: z.string() }),
    effect: 'read',
    execute: ({ path }) => {
      throw new ToolError('not_found', `file ${path} not found`)
    },
  })

  it('never turn a success into tool_crashed nor a not_found into tool_panic, and are logged once each', async () => {
    const { logger, lines } = capturingLogger(['info', 'debug', 'warn', 'child'])
    const stack = createStack({
      middleware: defaultMiddleware({
        circuitBreaker: {
          policy: consecutive({ threshold: 1 }),
          isFailure: () => true,
          onStateChange: () => {
            throw new Error('dashboard is down')
          },
        },
      }),
      tools: [ok, missing],
      clock: manualClock(),
      logger,
    })
    stack.on(() => {
      throw new TypeError('listener bug')
    })
    for (let i = 0; i < 3; i++) {
      expect(await stack.dispatch({ id: `s${i}`, name: 'search', args: { q: `q${i}` } })).toMatchObject({ ok: true })
    }
    expect((await stack.dispatch({ id: 'm1', name: 'read_file', args: { path: 'a' } })).error).toMatchObject({ code: 'not_found' })
    expect((await stack.dispatch({ id: 'm2', name: 'read_file', args: { path: 'b' } })).error).toMatchObject({ code: 'circuit_open' })
    const errors = lines.filter((l) => l.level === 'error').map((l) => l.msg ?? '')
    expect(errors.filter((m) => m.includes('stack.on() listener threw'))).toHaveLength(1)
    expect(errors.filter((m) => m.includes('onStateChange threw'))).toHaveLength(1)
    expect(errors.filter((m) => /^logger\.\w+\(\) threw/.test(m)).sort()).toEqual([
      expect.stringMatching(/^logger\.child\(\)/),
      expect.stringMatching(/^logger\.debug\(\)/),
      expect.stringMatching(/^logger\.info\(\)/),
    ])
  })
})

describe('fifty calls waiting at once on one run signal', () => {
  const warningsDuring = async (work: () => Promise<void>): Promise<Error[]> => {
    const warnings: Error[] = []
    const onWarning = (warning: Error) => warnings.push(warning)
    process.on('warning', onWarning)
    try {
      await work()
      await new Promise((resolve) => setImmediate(resolve))
    } finally {
      process.off('warning', onWarning)
    }
    return warnings.filter((w) => w.name === 'MaxListenersExceededWarning')
  }

  function gatedTool() {
    let release = () => {}
    const gate = new Promise<void>((resolve) => {
      release = resolve
    })
    const tool = defineTool({
      name: 'fetch_page',
      description: '',
      input: z.object({ n: z.number() }),
      effect: 'read',
      execute: async ({ n }, { signal }) => {
        signal.addEventListener('abort', () => {}, { once: true })
        await gate
        return n
      },
    })
    return { tool, release }
  }

  it('print no MaxListenersExceededWarning through the default stack', async () => {
    const { tool, release } = gatedTool()
    const warnings = await warningsDuring(async () => {
      const stack = createStack({ middleware: defaultMiddleware(), tools: [tool], clock: manualClock() })
      const run = createRun({ signal: new AbortController().signal })
      const calls = Array.from({ length: 50 }, (_, n) => stack.dispatch({ id: `c${n}`, name: 'fetch_page', args: { n } }, { run }))
      await new Promise((resolve) => setImmediate(resolve))
      release()
      expect((await Promise.all(calls)).every((r) => r.ok)).toBe(true)
    })
    expect(warnings).toEqual([])
  })

  it('print no MaxListenersExceededWarning in one createAgent turn of fifty parallel calls', async () => {
    const { tool, release } = gatedTool()
    const warnings = await warningsDuring(async () => {
      const calls = Array.from({ length: 50 }, (_, n) => ({ id: `c${n}`, name: 'fetch_page', args: { n } }))
      const model: ModelAdapter = {
        generate: async ({ messages }) => (messages.length === 1 ? { toolCalls: calls } : { text: 'done', toolCalls: [] }),
      }
      const agent = createAgent({
        model,
        tools: [tool],
        middleware: defaultMiddleware(),
        clock: manualClock(),
        limits: { maxParallelToolCalls: 50, maxSteps: 200 },
      })
      const outcome = agent.run({ input: 'fetch them all', signal: new AbortController().signal })
      await new Promise((resolve) => setImmediate(resolve))
      release()
      expect(await outcome).toMatchObject({ status: 'completed', output: 'done' })
    })
    expect(warnings).toEqual([])
  })
})
