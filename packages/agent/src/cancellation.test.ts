import { type Clock, createRun, createStack, defineTool, LoopError, type ModelAdapter, ToolError } from '@shallot/core'
import { describe, expect, it, vi } from 'vitest'
import { z } from 'zod'
import { createAgent } from './index.js'

/** What a promise has done after a few turns of the event loop: enough for anything that does not wait on time. */
async function soon<T>(
  promise: Promise<T>,
): Promise<{ state: 'pending' } | { state: 'resolved'; value: T } | { state: 'rejected'; error: unknown }> {
  let outcome: { state: 'pending' } | { state: 'resolved'; value: T } | { state: 'rejected'; error: unknown } = { state: 'pending' }
  promise.then(
    (value) => {
      outcome = { state: 'resolved', value }
    },
    (error: unknown) => {
      outcome = { state: 'rejected', error }
    },
  )
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve))
  return outcome
}

const isCancelled = (e: unknown) => LoopError.is(e) && e.kind === 'cancelled'

/** A clock whose time never moves: anything that waits on it (a model deadline) waits forever. */
const frozenClock: Clock = {
  now: () => 0,
  sleep: (_ms, signal) => new Promise((_resolve, reject) => signal?.addEventListener('abort', () => reject(signal.reason), { once: true })),
  timer: () => () => {},
}

/** A tool that never settles by itself and never looks at its signal; the test settles it late. */
function stubbornTool(effect: 'read' | 'write' = 'write') {
  let settle: { resolve: (value: string) => void; reject: (error: unknown) => void } | undefined
  let runs = 0
  const tool = defineTool({
    name: 'stubborn',
    description: 'Never answers in time',
    input: z.object({}),
    effect,
    execute: () => {
      runs++
      return new Promise<string>((resolve, reject) => {
        settle = { resolve, reject }
      })
    },
  })
  return {
    tool,
    runs: () => runs,
    lateResolve: (value: string) => settle?.resolve(value),
    lateReject: (error: unknown) => settle?.reject(error),
  }
}

describe('a tool that never settles and ignores its signal, with no timeout layer', () => {
  it('is cancelled the moment the run is, and its late result changes nothing', async () => {
    const { tool, runs, lateResolve } = stubbornTool()
    const events: string[] = []
    const stack = createStack({ tools: [tool] })
    stack.on((event) => events.push(event.type))
    const controller = new AbortController()
    const run = createRun({ signal: controller.signal })
    const call = stack.dispatch({ id: 'c1', name: 'stubborn', args: {} }, { run })
    expect((await soon(call)).state).toBe('pending')
    controller.abort()
    const settled = await soon(call)
    expect(settled.state).toBe('rejected')
    expect(settled.state === 'rejected' && isCancelled(settled.error)).toBe(true)
    lateResolve('charged')
    await soon(Promise.resolve())
    expect(runs()).toBe(1)
    expect(run.budget.used).toBe(1)
    // The late result is no event of its own: the call ended as cancelled, and that is all a listener hears.
    expect(events).toEqual(['call.started', 'call.finished'])
  })

  it('is cancelled the moment the dispatch signal aborts, and a late rejection is never unhandled', async () => {
    const { tool, runs, lateReject } = stubbornTool()
    const stack = createStack({ tools: [tool] })
    const controller = new AbortController()
    const call = stack.dispatch({ id: 'c1', name: 'stubborn', args: {} }, { signal: controller.signal })
    expect((await soon(call)).state).toBe('pending')
    expect(runs()).toBe(1)
    controller.abort()
    const settled = await soon(call)
    expect(settled.state === 'rejected' && isCancelled(settled.error)).toBe(true)
    // Vitest fails the run on an unhandled rejection: this one must be swallowed.
    lateReject(new Error('socket hang up'))
    await soon(Promise.resolve())
  })

  it('is cancelled through every layer, with the run and the dispatch signals both set', async () => {
    const { tool, runs } = stubbornTool('read')
    const order: string[] = []
    const stack = createStack({
      tools: [tool],
      middleware: [
        async function outer(_ctx, next) {
          try {
            await next()
          } finally {
            order.push('outer settled')
          }
        },
      ],
    })
    const runSignal = new AbortController()
    const callSignal = new AbortController()
    const call = stack.dispatch(
      { id: 'c1', name: 'stubborn', args: {} },
      { run: createRun({ signal: runSignal.signal }), signal: callSignal.signal },
    )
    expect((await soon(call)).state).toBe('pending')
    expect(runs()).toBe(1)
    callSignal.abort(new ToolError('timeout', 'the caller gave up'))
    const settled = await soon(call)
    expect(settled).toMatchObject({ state: 'resolved', value: { ok: false, error: { code: 'timeout', message: 'the caller gave up' } } })
    expect(order).toEqual(['outer settled'])
  })

  it('ends a createAgent run at once when the run is cancelled', async () => {
    const { tool } = stubbornTool()
    const model: ModelAdapter = { generate: async () => ({ toolCalls: [{ id: 'c1', name: 'stubborn', args: {} }] }) }
    const agent = createAgent({ model, tools: [tool], clock: frozenClock })
    const controller = new AbortController()
    const outcome = agent.run({ input: 'charge the card', signal: controller.signal })
    expect((await soon(outcome)).state).toBe('pending')
    controller.abort()
    const settled = await soon(outcome)
    expect(settled.state).toBe('resolved')
    expect(settled.state === 'resolved' && settled.value.status === 'stopped' && settled.value.error.kind).toBe('cancelled')
  })
})

describe('a model adapter whose generate() ignores its signal', () => {
  it('ends the run the moment it is cancelled, not at a deadline', async () => {
    let late: ((value: { text: string; toolCalls: [] }) => void) | undefined
    const model: ModelAdapter = {
      generate: () =>
        new Promise((resolve) => {
          late = resolve
        }),
    }
    const agent = createAgent({ model, tools: [], clock: frozenClock })
    const controller = new AbortController()
    const outcome = agent.run({ input: 'hello', signal: controller.signal })
    expect((await soon(outcome)).state).toBe('pending')
    controller.abort()
    const settled = await soon(outcome)
    expect(settled.state === 'resolved' && settled.value.status === 'stopped' && settled.value.error.kind).toBe('cancelled')
    late?.({ text: 'too late', toolCalls: [] })
    await soon(Promise.resolve())
    expect(settled.state === 'resolved' && settled.value.transcript).toEqual([{ role: 'user', content: 'hello' }])
  })

  it('aborts the signal it handed the adapter once the answer is in, so a stream it left open is closed', async () => {
    let seen: AbortSignal | undefined
    const model: ModelAdapter = {
      generate: async ({ signal }) => {
        seen = signal
        return { text: 'done', toolCalls: [] }
      },
    }
    const agent = createAgent({ model, tools: [], clock: frozenClock })
    const outcome = await agent.run({ input: 'hello' })
    expect(outcome.status).toBe('completed')
    expect(seen?.aborted).toBe(true)
  })

  it('creates no AbortController per model call for an adapter that never reads its signal', async () => {
    const Original = globalThis.AbortController
    let created = 0
    globalThis.AbortController = class extends Original {
      constructor() {
        super()
        created++
      }
    }
    /** A model that answers after `turns` turns of a tool that is not there (each turn one model call). */
    const turns = (n: number): ModelAdapter => ({
      generate: async ({ messages }) =>
        messages.filter((m) => m.role === 'tool').length >= n
          ? { text: 'done' }
          : { toolCalls: [{ id: `c${messages.length}`, name: 'nope', args: {} }] },
    })
    try {
      const caller = new Original()
      const counted = async (n: number, signal?: AbortSignal) => {
        const agent = createAgent({ model: turns(n), tools: [], clock: frozenClock })
        created = 0
        expect((await agent.run(signal === undefined ? { input: 'hello' } : { input: 'hello', signal })).status).toBe('completed')
        return created
      }
      // A run nobody can cancel has none at all; a run the caller can cancel has its own signal, and nothing per call.
      expect(await counted(1)).toBe(0)
      expect(await counted(4)).toBe(0)
      expect(await counted(4, caller.signal)).toBe(await counted(1, caller.signal))
    } finally {
      globalThis.AbortController = Original
    }
  })
})

describe('the model request on the real clock', () => {
  it('keeps its signal through an adapter wrapper that spreads it, and cancelling the run aborts it', async () => {
    let seen: AbortSignal | undefined
    const inner: ModelAdapter = {
      generate: ({ signal }) =>
        new Promise((_resolve, reject) => {
          seen = signal
          signal.addEventListener('abort', () => reject(signal.reason), { once: true })
        }),
    }
    // A wrapper as users write them: the request spread, one field replaced.
    const trimming: ModelAdapter = { generate: (request) => inner.generate({ ...request, messages: request.messages.slice(-4) }) }
    const controller = new AbortController()
    const outcome = createAgent({ model: trimming, tools: [] }).run({ input: 'hello', signal: controller.signal })
    await soon(outcome)
    expect(seen?.aborted).toBe(false)
    controller.abort(new Error('user gave up'))
    expect(await outcome).toMatchObject({ status: 'stopped', error: { kind: 'cancelled' } })
    expect(seen?.aborted).toBe(true)
  })

  it('hands an adapter that reads the signal only after answering one that is already aborted', async () => {
    let kept: { readonly signal: AbortSignal } | undefined
    const model: ModelAdapter = {
      generate: async (request) => {
        kept = request
        return { text: 'done', toolCalls: [] }
      },
    }
    expect((await createAgent({ model, tools: [] }).run({ input: 'hello' })).status).toBe('completed')
    expect(kept?.signal.aborted).toBe(true)
    expect(ToolError.is(kept?.signal.reason) && kept.signal.reason.code).toBe('cancelled')
  })
})

describe('when an attempt settles, the signal handed to the tool is aborted', () => {
  function leavesTimer(outcome: 'return' | 'throw') {
    const fired = vi.fn()
    const tool = defineTool({
      name: 'leaves_timer',
      description: 'Starts work it never waits for',
      input: z.object({}),
      effect: 'read',
      execute: async (_args, { signal }) => {
        const t = setTimeout(fired, 60_000)
        signal.addEventListener('abort', () => clearTimeout(t), { once: true })
        if (outcome === 'throw') throw new ToolError('not_found', 'no such page')
        return 'ok'
      },
    })
    return { tool, fired }
  }

  it('clears a timer the tool left running, after a success and after a failure', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    try {
      for (const outcome of ['return', 'throw'] as const) {
        const { tool, fired } = leavesTimer(outcome)
        const stack = createStack({ tools: [tool] })
        const result = await stack.dispatch({ id: 'c1', name: 'leaves_timer', args: {} })
        expect(result.ok).toBe(outcome === 'return')
        expect(vi.getTimerCount()).toBe(0)
        vi.advanceTimersByTime(60_000)
        expect(fired).not.toHaveBeenCalled()
      }
    } finally {
      vi.useRealTimers()
    }
  })

  it('hands a tool that reads its signal only after the call settled one that is already aborted', async () => {
    let kept: { readonly signal: AbortSignal } | undefined
    const tool = defineTool({
      name: 'later',
      description: '',
      input: z.object({}),
      effect: 'read',
      execute: (_args, context) => {
        kept = context
        return 'ok'
      },
    })
    expect((await createStack({ tools: [tool] }).dispatch({ id: 'c1', name: 'later', args: {} })).ok).toBe(true)
    expect(kept?.signal.aborted).toBe(true)
  })

  it('tells the tool why: its own abort reason once the attempt is over', async () => {
    let seen: AbortSignal | undefined
    const tool = defineTool({
      name: 'peek',
      description: '',
      input: z.object({}),
      effect: 'read',
      execute: (_args, { signal }) => {
        seen = signal
        return signal.aborted
      },
    })
    const stack = createStack({ tools: [tool] })
    const result = await stack.dispatch({ id: 'c1', name: 'peek', args: {} })
    expect(result.value).toBe(false)
    expect(seen?.aborted).toBe(true)
    expect(seen?.reason).toMatchObject({ code: 'cancelled' })
  })

  it('creates no AbortController for a tool that never reads its signal, even with a run and a dispatch signal', async () => {
    const tool = defineTool({ name: 'quiet', description: '', input: z.object({ n: z.number() }), effect: 'read', execute: ({ n }) => n })
    const stack = createStack({ tools: [tool] })
    const run = createRun({ signal: new AbortController().signal })
    const own = new AbortController().signal
    const Original = globalThis.AbortController
    let created = 0
    globalThis.AbortController = class extends Original {
      constructor() {
        super()
        created++
      }
    }
    try {
      for (let n = 0; n < 20; n++)
        expect((await stack.dispatch({ id: `c${n}`, name: 'quiet', args: { n } }, { run, signal: own })).ok).toBe(true)
      expect(created).toBe(0)
    } finally {
      globalThis.AbortController = Original
    }
  })
})
