import {
  createRun,
  createStack,
  defineTool,
  LoopError,
  type Middleware,
  OptionsError,
  type StackEvent,
  ToolError,
  type ToolResult,
} from '@shallot/core'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { fingerprint } from './fingerprint.js'
import { resetStuckLoop, type StuckLoopOptions, stuckLoop } from './index.js'
import { STATE_KEY as STUCK_LOOP_STATE_KEY } from './loop-ledger.js'
import { stuckLoopOptionsSchema } from './stuck-loop.js'

const MISSING = 'file src/mian.rs not found'

/** A read_file tool over an in-memory disk that counts how often it really ran. */
function fileWorld(files: Record<string, string> = { 'src/main.rs': 'fn main() {}' }) {
  const world = { files, invocations: 0 }
  const readFile = defineTool({
    name: 'read_file',
    description: 'Read a text file',
    input: z.object({ path: z.string(), limit: z.number().optional() }),
    effect: 'read',
    execute: ({ path }) => {
      world.invocations++
      const text = world.files[path]
      if (text === undefined) throw new ToolError('not_found', `file ${path} not found`, { hint: 'list the directory first' })
      return text
    },
  })
  return { world, readFile }
}

function setup(options: StuckLoopOptions = {}, extra: Middleware[] = []) {
  const { world, readFile } = fileWorld()
  const stack = createStack({ middleware: [stuckLoop(options), ...extra], tools: [readFile] })
  const events: StackEvent[] = []
  stack.on((event) => {
    // The layers' own events; the stack's call.started / call.finished are asserted in core.
    if (!event.type.startsWith('call.')) events.push(event)
  })
  const run = createRun()
  let n = 0
  const read = (args: unknown, r = run) => stack.dispatch({ id: `c${++n}`, name: 'read_file', args }, { run: r })
  return { world, stack, run, events, read }
}

const isLoopDetected = (e: unknown) => LoopError.is(e) && e.kind === 'loop_detected'

describe('stuckLoop: identical failures', () => {
  it('refuses the third identical failing call before it runs', async () => {
    const { world, read } = setup()
    const first = await read({ path: 'src/mian.rs' })
    const second = await read({ path: 'src/mian.rs' })
    const third = await read({ path: 'src/mian.rs' })
    expect([first.error?.code, second.error?.code]).toEqual(['not_found', 'not_found'])
    expect(third.ok).toBe(false)
    expect(third.error).toMatchObject({
      code: 'repeated_failure',
      category: 'recoverable',
      retryable: false,
      safeToRepeat: true,
      message: `read_file failed 2 times with these arguments (last error: not_found: ${MISSING}). Do not repeat it; try a different approach or ask the user.`,
      hint: 'list the directory first',
    })
    expect(world.invocations).toBe(2)
  })

  it('ends the run with loop_detected at stopAfter, with details naming the tool', async () => {
    const { world, read } = setup()
    const results: ToolResult[] = []
    for (let i = 0; i < 4; i++) results.push(await read({ path: 'src/mian.rs' }))
    expect(results.map((r) => r.error?.code)).toEqual(['not_found', 'not_found', 'repeated_failure', 'repeated_failure'])
    const fifth = read({ path: 'src/mian.rs' })
    await expect(fifth).rejects.toSatisfy(isLoopDetected)
    const error = (await fifth.catch((e: unknown) => e)) as LoopError
    expect(error.message).toBe(
      `read_file was called 5 times with the same arguments and it failed the same way every time (last error: not_found: ${MISSING}); the model is not adapting`,
    )
    expect(error.details).toEqual({
      tool: 'read_file',
      reason: 'repeated_failure',
      count: 5,
      fingerprint: fingerprint('read_file', { path: 'src/mian.rs' }),
      lastError: `not_found: ${MISSING}`,
    })
    expect(world.invocations).toBe(2)
  })

  it('honours custom thresholds', async () => {
    const { world, read } = setup({ refuseAfter: 1, stopAfter: 3 })
    expect((await read({ path: 'x' })).error?.code).toBe('not_found')
    expect((await read({ path: 'x' })).error?.message).toMatch(/^read_file failed 1 times/)
    await expect(read({ path: 'x' })).rejects.toSatisfy(isLoopDetected)
    expect(world.invocations).toBe(1)
  })

  it('does not spend the step budget on a refused call', async () => {
    const { read } = setup()
    const run = createRun({ maxSteps: 2 })
    await read({ path: 'x' }, run)
    await read({ path: 'x' }, run)
    expect((await read({ path: 'x' }, run)).error?.code).toBe('repeated_failure')
    expect(run.budget.used).toBe(2)
  })

  it('emits and logs refused and stopped events in order', async () => {
    const logged: string[] = []
    const { readFile } = fileWorld()
    const logger = {
      debug() {},
      info() {},
      warn: (_obj: object, msg?: string) => logged.push(msg ?? ''),
      error() {},
      child: () => logger,
    }
    const stack = createStack({ middleware: [stuckLoop()], tools: [readFile], logger })
    const events: string[] = []
    stack.on((e) => {
      // The layers' own events; the stack's call.started / call.finished are asserted in core.
      if (!e.type.startsWith('call.')) events.push(e.type)
    })
    const run = createRun()
    const call = { id: 'c', name: 'read_file', args: { path: 'x' } }
    await stack.dispatch(call, { run })
    await stack.dispatch(call, { run })
    const refused = await stack.dispatch(call, { run })
    expect(refused.trace).toEqual([
      expect.objectContaining({
        type: 'stuck-loop.refused',
        reason: 'repeated_failure',
        count: 3,
        lastError: 'not_found: file x not found',
      }),
    ])
    await stack.dispatch(call, { run })
    await expect(stack.dispatch(call, { run })).rejects.toSatisfy(isLoopDetected)
    expect(events).toEqual(['stuck-loop.refused', 'stuck-loop.refused', 'stuck-loop.stopped'])
    expect(logged).toContain('stuck-loop refused a repeated call')
    expect(logged).toContain('stuck-loop stopped the run: the model keeps repeating a call')
  })
})

describe('stuckLoop: what counts as identical', () => {
  it('counts key order, JSON whitespace and 1 vs 1.0 as the same arguments', async () => {
    const { world, read } = setup()
    await read({ path: 'src/mian.rs', limit: 1 })
    await read('{ "limit" : 1.0 ,\n   "path": "src/mian.rs" }')
    const third = await read('{"path":"src/mian.rs","limit":1e0}')
    expect(third.error?.code).toBe('repeated_failure')
    expect(world.invocations).toBe(2)
  })

  it('does not count different arguments as the same call', async () => {
    const { world, read } = setup()
    await read({ path: 'a.rs' })
    await read({ path: 'a.rs' })
    const other = await read({ path: 'b.rs' })
    const otherLimit = await read({ path: 'a.rs', limit: 2 })
    expect([other.error?.code, otherLimit.error?.code]).toEqual(['not_found', 'not_found'])
    expect(world.invocations).toBe(4)
  })

  it('counts failures whose messages differ only in numbers and ids as the same outcome', async () => {
    let ms = 1203
    const slow = defineTool({
      name: 'slow',
      description: '',
      input: z.object({}),
      effect: 'read',
      execute: () => {
        throw new ToolError('upstream_error', `upstream took ${ms}ms (request ${(ms * 7919).toString(16)}ab)`, { retryable: false })
      },
    })
    const stack = createStack({ middleware: [stuckLoop()], tools: [slow] })
    const run = createRun()
    await stack.dispatch({ id: '1', name: 'slow', args: {} }, { run })
    ms = 998
    await stack.dispatch({ id: '2', name: 'slow', args: {} }, { run })
    const third = await stack.dispatch({ id: '3', name: 'slow', args: {} }, { run })
    expect(third.error?.code).toBe('repeated_failure')
    expect(third.error?.message).toContain('upstream took 998ms')
  })

  it("notices a tool's first failure after other tools already failed", async () => {
    const { world, stack, run, read } = setup()
    await stack.dispatch({ id: 'u', name: 'other_tool', args: {} }, { run })
    await read({ path: 'ok.rs' })
    await read({ path: 'x' })
    await read({ path: 'x' })
    expect((await read({ path: 'x' })).error?.code).toBe('repeated_failure')
    expect(world.invocations).toBe(3)
  })

  it('counts calls of an unknown tool, so a misspelled name cannot loop forever', async () => {
    const { stack, run } = setup()
    const call = { id: 'c', name: 'raed_file', args: { path: 'a' } }
    expect((await stack.dispatch(call, { run })).error?.code).toBe('unknown_tool')
    await stack.dispatch(call, { run })
    const third = await stack.dispatch(call, { run })
    expect(third.error?.code).toBe('repeated_failure')
    expect(third.error?.message).toContain("Did you mean 'read_file'?")
  })

  it('counts a thrown non-ToolError that an outer panic catcher will convert', async () => {
    let invocations = 0
    const crashy = defineTool({
      name: 'crashy',
      description: '',
      input: z.object({}),
      effect: 'read',
      execute: () => {
        invocations++
        throw new Error('boom')
      },
    })
    const catchPanics: Middleware = async function catchPanics(_ctx, next) {
      try {
        await next()
      } catch (err) {
        if (ToolError.is(err) || LoopError.is(err)) throw err
        throw new ToolError('tool_panic', `Tool "crashy" panicked: ${(err as Error).message}`)
      }
    }
    const stack = createStack({ middleware: [catchPanics, stuckLoop()], tools: [crashy] })
    const run = createRun()
    const call = { id: 'c', name: 'crashy', args: {} }
    await stack.dispatch(call, { run })
    await stack.dispatch(call, { run })
    const third = await stack.dispatch(call, { run })
    expect(third.error?.message).toContain('(last error: tool_panic: boom)')
    expect(invocations).toBe(2)
  })
})

describe('stuckLoop: a model that adapts', () => {
  it('completes the run when the model changes its arguments after the refusal', async () => {
    const { world, read } = setup()
    // A "model" that repeats its call until it is refused, then fixes the typo and answers.
    let path = 'src/mian.rs'
    const transcript: string[] = []
    let answer: string | undefined
    for (let turn = 0; turn < 10 && answer === undefined; turn++) {
      const result = await read({ path })
      transcript.push(result.ok ? 'ok' : (result.error?.code ?? ''))
      if (result.ok) answer = String(result.value)
      else if (result.error?.code === 'repeated_failure') path = 'src/main.rs'
    }
    expect(answer).toBe('fn main() {}')
    expect(transcript).toEqual(['not_found', 'not_found', 'repeated_failure', 'ok'])
    expect(world.invocations).toBe(3)
  })

  it('forgets the failures of a fingerprint once it succeeds', async () => {
    const { world, read, run } = setup()
    await read({ path: 'late.rs' })
    world.files['late.rs'] = 'now here'
    expect((await read({ path: 'late.rs' })).ok).toBe(true)
    delete world.files['late.rs']
    expect((run.state[STUCK_LOOP_STATE_KEY] as { calls: object }).calls).toEqual({})
    await read({ path: 'late.rs' })
    const fourth = await read({ path: 'late.rs' })
    expect(fourth.error?.code).toBe('not_found')
    expect(world.invocations).toBe(4)
  })

  it('counts only consecutive identical outcomes as an identical streak', async () => {
    const script = ['a', 'b', 'a', 'b', 'b']
    let invocations = 0
    const tool = defineTool({
      name: 'sync',
      description: '',
      input: z.object({}),
      effect: 'idempotent',
      execute: () => {
        throw new ToolError('conflict', `error ${script[invocations++]}`)
      },
    })
    const stack = createStack({ middleware: [stuckLoop({ flailAfter: 5, stopAfter: 7 })], tools: [tool] })
    const run = createRun()
    const codes: string[] = []
    for (let i = 0; i < 6; i++) codes.push((await stack.dispatch({ id: `${i}`, name: 'sync', args: {} }, { run })).error?.message ?? '')
    expect(codes.slice(0, 5)).toEqual(['error a', 'error b', 'error a', 'error b', 'error b'])
    expect(codes[5]).toMatch(/^sync failed 2 times with these arguments \(last error: conflict: error b\)/)
    expect(invocations).toBe(5)
  })
})

describe('stuckLoop: flailing', () => {
  function flailer() {
    const errors = [
      new ToolError('upstream_error', 'bad gateway', { retryable: false }),
      new ToolError('conflict', 'version mismatch'),
      new ToolError('invalid_arguments', 'date must include a UTC offset'),
      new ToolError('not_found', 'no such order'),
    ]
    let invocations = 0
    const tool = defineTool({
      name: 'book',
      description: '',
      input: z.object({ order: z.string() }),
      effect: 'idempotent',
      execute: () => {
        throw errors[invocations++ % errors.length]
      },
    })
    const stack = createStack({ middleware: [stuckLoop()], tools: [tool] })
    return { stack, count: () => invocations }
  }

  it('refuses the same arguments failing with a different error each time, then stops', async () => {
    const { stack, count } = flailer()
    const run = createRun()
    const call = { id: 'c', name: 'book', args: { order: 'ORD-1' } }
    const codes: string[] = []
    for (let i = 0; i < 4; i++) codes.push((await stack.dispatch(call, { run })).error?.code ?? '')
    expect(codes).toEqual(['upstream_error', 'conflict', 'invalid_arguments', 'repeated_failure'])
    expect(count()).toBe(3)
    const refused = await stack.dispatch(call, { run }).catch((e: unknown) => e)
    expect(refused).toSatisfy(isLoopDetected)
    expect((refused as LoopError).details).toMatchObject({ tool: 'book', reason: 'flailing', count: 5 })
  })

  it('words the flailing refusal for changing errors', async () => {
    const { stack } = flailer()
    const run = createRun()
    const call = { id: 'c', name: 'book', args: { order: 'ORD-1' } }
    for (let i = 0; i < 3; i++) await stack.dispatch(call, { run })
    const refused = await stack.dispatch(call, { run })
    expect(refused.error?.message).toBe(
      'book failed 3 times with these arguments, with changing errors (last error: invalid_arguments: date must include a UTC offset). Do not repeat it; try a different approach or ask the user.',
    )
  })
})

describe('stuckLoop: repeated successes', () => {
  function poller() {
    const world = { value: 'pending', invocations: 0 }
    const status = defineTool({
      name: 'job_status',
      description: '',
      input: z.object({ job: z.string() }),
      effect: 'read',
      execute: () => {
        world.invocations++
        return { state: world.value }
      },
    })
    return { world, status }
  }

  it('ignores identical successes unless successRepeatLimit is set', async () => {
    const { world, status } = poller()
    const stack = createStack({ middleware: [stuckLoop()], tools: [status] })
    const run = createRun()
    for (let i = 0; i < 8; i++)
      expect((await stack.dispatch({ id: `${i}`, name: 'job_status', args: { job: 'j' } }, { run })).ok).toBe(true)
    expect(world.invocations).toBe(8)
    expect(run.state[STUCK_LOOP_STATE_KEY]).toBeUndefined()
  })

  it('refuses, then stops, a call that keeps returning the same result', async () => {
    const { world, status } = poller()
    const stack = createStack({ middleware: [stuckLoop({ successRepeatLimit: 3 })], tools: [status] })
    const run = createRun()
    const call = { id: 'c', name: 'job_status', args: { job: 'j' } }
    for (let i = 0; i < 3; i++) expect((await stack.dispatch(call, { run })).ok).toBe(true)
    const fourth = await stack.dispatch(call, { run })
    expect(fourth.error).toMatchObject({ code: 'repeated_call', retryable: false })
    expect(fourth.error?.message).toBe(
      'job_status returned the same result 3 times for these arguments; calling it again will not change it. Use the result you already have, try a different approach, or ask the user.',
    )
    await expect(stack.dispatch(call, { run })).rejects.toSatisfy(
      (e: unknown) => isLoopDetected(e) && (e as LoopError).details.reason === 'repeated_success',
    )
    expect(world.invocations).toBe(3)
  })

  it('restarts the streak when the result changes', async () => {
    const { world, status } = poller()
    const stack = createStack({ middleware: [stuckLoop({ successRepeatLimit: 2 })], tools: [status] })
    const run = createRun()
    const call = { id: 'c', name: 'job_status', args: { job: 'j' } }
    await stack.dispatch(call, { run })
    world.value = 'running'
    await stack.dispatch(call, { run })
    expect((await stack.dispatch(call, { run })).ok).toBe(true)
    expect((await stack.dispatch(call, { run })).error?.code).toBe('repeated_call')
    expect(world.invocations).toBe(3)
  })
})

describe('stuckLoop: mixed streaks', () => {
  it('starts a fresh failure streak after identical successes', async () => {
    const { world, status } = (() => {
      const w = { fail: false, invocations: 0 }
      const t = defineTool({
        name: 'job_status',
        description: '',
        input: z.object({ job: z.string() }),
        effect: 'read',
        execute: () => {
          w.invocations++
          if (w.fail) throw new ToolError('not_found', 'job j not found')
          return 'pending'
        },
      })
      return { world: w, status: t }
    })()
    const stack = createStack({ middleware: [stuckLoop({ successRepeatLimit: 3 })], tools: [status] })
    const run = createRun()
    const call = { id: 'c', name: 'job_status', args: { job: 'j' } }
    await stack.dispatch(call, { run })
    await stack.dispatch(call, { run })
    world.fail = true
    await stack.dispatch(call, { run })
    await stack.dispatch(call, { run })
    // Two identical failures, so the next call is refused, not the fifth attempt that stops the run.
    expect((await stack.dispatch(call, { run })).error?.code).toBe('repeated_failure')
    expect(world.invocations).toBe(4)
  })
})

describe('stuckLoop: parallel calls', () => {
  it('lets a success that finishes after a parallel failure forget that failure', async () => {
    const pending: Array<{ resolve: (v: string) => void; reject: (e: unknown) => void }> = []
    const slow = defineTool({
      name: 'fetch',
      description: '',
      input: z.object({ url: z.string() }),
      effect: 'read',
      execute: () => new Promise<string>((resolve, reject) => pending.push({ resolve, reject })),
    })
    const stack = createStack({ middleware: [stuckLoop()], tools: [slow] })
    const run = createRun()
    const call = { id: 'c', name: 'fetch', args: { url: 'u' } }
    const first = stack.dispatch(call, { run })
    const second = stack.dispatch(call, { run })
    await new Promise<void>((resolve) => setImmediate(resolve))
    expect(pending).toHaveLength(2)
    pending[1]?.reject(new ToolError('upstream_error', 'bad gateway', { retryable: false }))
    expect((await second).error?.code).toBe('upstream_error')
    expect(Object.keys((run.state[STUCK_LOOP_STATE_KEY] as { calls: object }).calls)).toHaveLength(1)
    pending[0]?.resolve('page')
    expect((await first).ok).toBe(true)
    expect((run.state[STUCK_LOOP_STATE_KEY] as { calls: object }).calls).toEqual({})
  })
})

describe('stuckLoop: run state', () => {
  it('keeps its counts through a JSON round trip of run.state', async () => {
    const { world, read, run } = setup()
    await read({ path: 'src/mian.rs' })
    await read({ path: 'src/mian.rs' })
    const resumed = createRun({ state: JSON.parse(JSON.stringify(run.state)) })
    expect((await read({ path: 'src/mian.rs' }, resumed)).error?.code).toBe('repeated_failure')
    expect((await read({ path: 'src/mian.rs' }, resumed)).error?.code).toBe('repeated_failure')
    const again = createRun({ state: JSON.parse(JSON.stringify(resumed.state)) })
    await expect(read({ path: 'src/mian.rs' }, again)).rejects.toSatisfy(isLoopDetected)
    expect(world.invocations).toBe(2)
  })

  it('keeps counts per run: another run starts clean', async () => {
    const { world, read } = setup()
    await read({ path: 'x' })
    await read({ path: 'x' })
    expect((await read({ path: 'x' }, createRun())).error?.code).toBe('not_found')
    expect(world.invocations).toBe(3)
  })

  it('remembers only the last `window` fingerprints, forgetting the least recently seen', async () => {
    const { world, read, run } = setup({ window: 2 })
    await read({ path: 'a' })
    await read({ path: 'b' })
    await read({ path: 'a' })
    await read({ path: 'c' })
    const calls = (run.state[STUCK_LOOP_STATE_KEY] as { calls: object }).calls
    expect(Object.keys(calls).sort()).toEqual([fingerprint('read_file', { path: 'a' }), fingerprint('read_file', { path: 'c' })].sort())
    expect((await read({ path: 'a' })).error?.code).toBe('repeated_failure')
    await read({ path: 'd' })
    await read({ path: 'e' })
    expect((await read({ path: 'a' })).error?.code).toBe('not_found')
    expect(world.invocations).toBe(7)
  })

  it('starts over after resetStuckLoop, e.g. when a human fixed the cause', async () => {
    const { world, read, run } = setup()
    await read({ path: 'x' })
    await read({ path: 'x' })
    resetStuckLoop(run.state, { tool: 'read_file' })
    world.files.x = 'fixed'
    expect((await read({ path: 'x' })).ok).toBe(true)
  })

  it('keeps the counts of a run checkpointed under the old state key, and moves them to shallot.stuck-loop', async () => {
    const before = setup()
    await before.read({ path: 'x' })
    await before.read({ path: 'x' })
    // A checkpoint from a version that kept the ledger under 'stuck-loop'.
    const old = JSON.parse(JSON.stringify({ 'stuck-loop': before.run.state[STUCK_LOOP_STATE_KEY] }))
    const after = setup()
    Object.assign(after.run.state, old)
    expect((await after.read({ path: 'x' })).error?.code).toBe('repeated_failure')
    expect(Object.keys(after.run.state)).toEqual([STUCK_LOOP_STATE_KEY])
    expect(STUCK_LOOP_STATE_KEY).toBe('shallot.stuck-loop')
  })

  it('replaces unreadable state instead of failing', async () => {
    const { read, run } = setup()
    run.state[STUCK_LOOP_STATE_KEY] = 'garbage'
    await read({ path: 'x' })
    await read({ path: 'x' })
    expect((await read({ path: 'x' })).error?.code).toBe('repeated_failure')
  })
})

describe('stuckLoop: hard errors and options', () => {
  it('rethrows a LoopError from inside untouched and does not count it', async () => {
    const hard = new LoopError('budget_exhausted', 'no steps left')
    const spend: Middleware = async function spend() {
      throw hard
    }
    const { read, run } = setup({}, [spend])
    await expect(read({ path: 'x' })).rejects.toBe(hard)
    expect(run.state[STUCK_LOOP_STATE_KEY]).toBeUndefined()
  })

  it.each([
    [{ refuseAfter: 5, stopAfter: 5 }, /option refuseAfter: must be below stopAfter \(5\).*\(got 5\)/],
    [{ flailAfter: 1 }, /option flailAfter: must be at least refuseAfter \(2\)/],
    [{ successRepeatLimit: 9 }, /option successRepeatLimit: must be below stopAfter/],
    [{ stopAfter: 1 }, /option stopAfter/],
    [{ window: 0 }, /option window/],
    [{ refuseafter: 3 }, /refuseafter/],
  ])('rejects bad options at construction: %o', (options, message) => {
    const build = () => stuckLoop(options as StuckLoopOptions)
    expect(build).toThrow(OptionsError)
    expect(build).toThrow(message)
  })

  it('checks an options object at every construction, one accepted before and changed since included', () => {
    stuckLoop()
    const options = { refuseAfter: 2, stopAfter: 5 }
    stuckLoop(options)
    options.refuseAfter = 5
    expect(() => stuckLoop(options)).toThrow(/option refuseAfter: must be below stopAfter \(5\).*\(got 5\)/)
    expect(() => stuckLoop(JSON.parse('{"__proto__": {"refuseAfter": 1}}'))).toThrow(/unknown option "__proto__"/)
    expect(() => stuckLoop()).not.toThrow()
  })

  it('derives flailAfter and stopAfter from refuseAfter when they are not given', () => {
    expect(stuckLoopOptionsSchema.parse({})).toEqual({
      refuseAfter: 2,
      flailAfter: 3,
      stopAfter: 5,
      successRepeatLimit: undefined,
      window: 50,
    })
    expect(stuckLoopOptionsSchema.parse({ refuseAfter: 5 })).toMatchObject({ flailAfter: 6, stopAfter: 8 })
    expect(stuckLoopOptionsSchema.parse({ refuseAfter: 1, stopAfter: 3 })).toMatchObject({ flailAfter: 2 })
    expect(stuckLoopOptionsSchema.parse({ refuseAfter: 4, stopAfter: 5 })).toMatchObject({ flailAfter: 4 })
  })
})
