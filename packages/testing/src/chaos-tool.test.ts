import { createStack, defineTool, type ToolExecuteContext } from '@shallot/core'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { chaosTool, type FaultKind, faultError } from './chaos-tool.js'
import { manualClock } from './manual-clock.js'

const input = z.object({ n: z.number() })
const echo = defineTool({ name: 'echo', description: 'Echo n', input, effect: 'read', execute: ({ n }) => n })

function context(signal = new AbortController().signal): ToolExecuteContext {
  return { call: { id: 'c1', name: 'echo', args: {} }, signal, idempotencyKey: undefined, attempt: 1, log: console as never }
}

/** Runs one call to its end on `clock`, and says how it ended and after how many virtual ms. */
async function outcome(clock: ReturnType<typeof manualClock>, run: () => unknown): Promise<string> {
  const from = clock.now()
  const settled = Promise.resolve()
    .then(run)
    .then(
      (value) => `${String(value)}@${clock.now() - from}`,
      (err: { name: string; status?: number; code?: string }) => `${err.name}:${err.status ?? err.code ?? ''}@${clock.now() - from}`,
    )
  await clock.runAll()
  return settled
}

describe('chaosTool', () => {
  it('draws the same faults and latencies, in the same order, for the same seed', async () => {
    const clock = manualClock()
    const errors: FaultKind[] = ['rate_limit', 'server_error', 'bad_gateway', 'connection_reset', 'connection_refused', 'crash']
    const flaky = chaosTool(echo, { seed: 7, failRate: 0.3, errors, clock, latencyMs: [5, 15] })
    const seen: string[] = []
    for (let n = 0; n < 20; n++) seen.push(await outcome(clock, () => flaky.execute({ n }, context())))
    // `shallot sim` output depends on this order of draws: the outcome first, then its kind, then the latency.
    expect(seen).toEqual([
      'HTTPError:429@14.7690763277933',
      '1@10.214452685322613',
      '2@9.662326325196773',
      'Error:ECONNRESET@12.29822089895606',
      'HTTPError:429@12.640898865647614',
      '5@6.971372601110488',
      '6@7.932473379187286',
      '7@7.963302482385188',
      '8@7.475335942581296',
      '9@6.907917093485594',
      'HTTPError:429@7.909512131009251',
      '11@12.618736950680614',
      'TypeError:@10.53710747975856',
      '13@11.800909077282995',
      '14@11.24380644178018',
      '15@13.276284842286259',
      'HTTPError:503@8.569810141343623',
      '17@5.201761142816395',
      'Error:ECONNREFUSED@8.689693051856011',
      '19@9.686626282054931',
    ])
    expect(flaky.stats).toEqual({
      calls: 20,
      failures: 7,
      successes: 13,
      byKind: { rate_limit: 3, connection_reset: 1, crash: 1, server_error: 1, connection_refused: 1 },
    })
  })

  it('plays its script first, then draws', async () => {
    const clock = manualClock()
    const flaky = chaosTool(echo, { clock, failRate: 1, errors: ['bad_gateway'], script: ['ok', 'rate_limit', 'ok'], retryAfterSeconds: 9 })
    const ends: unknown[] = []
    for (let n = 0; n < 4; n++) {
      ends.push(
        await Promise.resolve()
          .then(() => flaky.execute({ n }, context()))
          .catch((err: unknown) => err),
      )
    }
    expect(ends).toEqual([
      0,
      expect.objectContaining({ name: 'HTTPError', status: 429, headers: { 'retry-after': '9' } }),
      2,
      expect.objectContaining({ name: 'HTTPError', status: 502 }),
    ])
    expect(flaky.stats).toEqual({ calls: 4, failures: 2, successes: 2, byKind: { rate_limit: 1, bad_gateway: 1 } })
  })

  it('answers through a stack what the tool it wraps answers', async () => {
    const clock = manualClock()
    const stack = createStack({ tools: [chaosTool(echo, { clock })], clock })
    const result = await stack.dispatch({ id: 'c1', name: 'echo', args: { n: 41 } })
    expect(result).toMatchObject({ ok: true, value: 41 })
  })

  it('counts a success only once an asynchronous tool resolved, and never for one that failed', async () => {
    const clock = manualClock()
    let release: (value: number) => void = () => {}
    const slow = defineTool({
      name: 'slow',
      description: 'Resolves when released',
      input,
      effect: 'read',
      execute: () =>
        new Promise<number>((resolve) => {
          release = resolve
        }),
    })
    const flaky = chaosTool(slow, { clock })
    const answer = flaky.execute({ n: 1 }, context())
    await Promise.resolve()
    expect(flaky.stats).toMatchObject({ calls: 1, successes: 0 })
    release(7)
    await expect(answer).resolves.toBe(7)
    expect(flaky.stats).toMatchObject({ calls: 1, successes: 1, failures: 0 })

    const broken = new Error('inner failure')
    const rejects = chaosTool(defineTool({ ...slow, execute: () => Promise.reject(broken) }), { clock })
    await expect(Promise.resolve().then(() => rejects.execute({ n: 1 }, context()))).rejects.toBe(broken)
    const throws = chaosTool(
      defineTool({
        ...slow,
        execute: () => {
          throw broken
        },
      }),
      { clock },
    )
    await expect(Promise.resolve().then(() => throws.execute({ n: 1 }, context()))).rejects.toBe(broken)
    expect([rejects.stats, throws.stats]).toEqual([
      { calls: 1, failures: 0, successes: 0, byKind: {} },
      { calls: 1, failures: 0, successes: 0, byKind: {} },
    ])
  })

  it('waits its latency on the clock before running the tool', async () => {
    const clock = manualClock()
    let ran = 0
    const counted = defineTool({
      ...echo,
      execute: ({ n }) => {
        ran++
        return n
      },
    })
    const flaky = chaosTool(counted, { clock, latencyMs: 30 })
    const answer = Promise.resolve(flaky.execute({ n: 3 }, context()))
    await clock.advance(29)
    expect(ran).toBe(0)
    await clock.advance(1)
    await expect(answer).resolves.toBe(3)
    expect(ran).toBe(1)
  })

  it('hangs on a timeout fault until the call is aborted, then rejects with the reason, leaving nothing behind', async () => {
    const clock = manualClock()
    const flaky = chaosTool(echo, { clock, script: ['timeout'] })
    const controller = new AbortController()
    const answer = Promise.resolve(flaky.execute({ n: 1 }, context(controller.signal)))
    await clock.advance(3_600_000)
    expect(clock.pending).toBe(1)
    const reason = new Error('gave up')
    controller.abort(reason)
    await expect(answer).rejects.toBe(reason)
    expect(clock.pending).toBe(0)
    expect(flaky.stats).toEqual({ calls: 1, failures: 1, successes: 0, byKind: { timeout: 1 } })
  })

  it('throws faults with a stack trace that shows where, and without one when asked (leaving the trace limit as it was)', async () => {
    const thrown = async (stackTraces: boolean | undefined) => {
      const flaky = chaosTool(echo, { script: ['server_error'], ...(stackTraces === undefined ? {} : { stackTraces }) })
      return (await Promise.resolve()
        .then(() => flaky.execute({ n: 1 }, context()))
        .catch((err: unknown) => err)) as Error & { status: number }
    }
    const limit = Error.stackTraceLimit
    const traced = await thrown(undefined)
    expect(traced.stack).toMatch(/\n\s+at .*chaos-tool\.ts/)
    const bare = await thrown(false)
    expect(bare).toMatchObject({ name: 'HTTPError', message: 'Service Unavailable', status: 503 })
    expect(bare).toBeInstanceOf(Error)
    expect(bare.stack).not.toMatch(/\n\s+at /)
    expect(Error.stackTraceLimit).toBe(limit)
    expect((await thrown(true)).stack).toMatch(/\n\s+at /)
    expect(() => chaosTool(echo, { stackTraces: 'no' as never })).toThrow(
      new TypeError('chaosTool(): stackTraces must be true or false, got no'),
    )
  })

  it('refuses a fail rate outside [0, 1] and an empty list of faults', () => {
    for (const failRate of [-0.1, 1.5, Number.NaN]) {
      expect(() => chaosTool(echo, { failRate })).toThrow(new TypeError(`chaosTool(): failRate must be between 0 and 1, got ${failRate}`))
    }
    expect(() => chaosTool(echo, { errors: [] })).toThrow('chaosTool(): errors must name at least one fault kind')
  })
})

describe('faultError', () => {
  it('builds each fault in the shape real clients throw it, with a stack trace that shows where it was thrown', () => {
    const shapes = (
      ['rate_limit', 'server_error', 'bad_gateway', 'connection_reset', 'connection_refused', 'crash', 'timeout'] as const
    ).map((kind) => faultError(kind, 3) as Error & Record<string, unknown>)
    expect(shapes.map((e) => ({ ...e, name: e.name, message: e.message }))).toEqual([
      { name: 'HTTPError', message: 'Too Many Requests', status: 429, headers: { 'retry-after': '3' } },
      { name: 'HTTPError', message: 'Service Unavailable', status: 503, headers: {} },
      { name: 'HTTPError', message: 'Bad Gateway', status: 502, headers: {} },
      { name: 'Error', message: 'read ECONNRESET', code: 'ECONNRESET', errno: 'ECONNRESET', syscall: 'connect' },
      { name: 'Error', message: 'connect ECONNREFUSED 127.0.0.1:443', code: 'ECONNREFUSED', errno: 'ECONNREFUSED', syscall: 'connect' },
      { name: 'TypeError', message: "Cannot read properties of undefined (reading 'id')" },
      { name: 'TimeoutError', message: 'The operation was aborted due to timeout', code: 23 },
    ])
    for (const error of shapes) {
      expect(error).toBeInstanceOf(Error)
      expect(error.stack).toMatch(/\n\s+at .*chaos-tool\.test\.ts/)
    }
  })
})
