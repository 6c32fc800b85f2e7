import { getEventListeners } from 'node:events'
import {
  createStack,
  type DispatchOptions,
  defineTool,
  LoopError,
  type Middleware,
  type ModelAdapter,
  type RunContext,
  type Stack,
} from '@shallot/core'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createAgent } from './index.js'

/** A model that asks for `calls` (one turn), then answers. */
function turnThenAnswer(calls: Array<{ id: string; name: string; args: unknown }>): ModelAdapter {
  return {
    generate: async ({ messages }) => (messages.some((m) => m.role === 'tool') ? { text: 'done' } : { toolCalls: calls }),
  }
}

const ok = defineTool({ name: 'ok', description: 'Answers', input: z.object({}), effect: 'read', execute: () => 'fine' })

/** A tool that blocks until its signal aborts, and records what it saw. */
function waitingTool() {
  const seen: { signal?: AbortSignal; reason?: unknown } = {}
  let entered: () => void = () => {}
  const started = new Promise<void>((resolve) => {
    entered = resolve
  })
  const tool = defineTool({
    name: 'wait',
    description: 'Waits for its signal',
    input: z.object({}),
    effect: 'read',
    execute: (_args, { signal }) =>
      new Promise<string>((_resolve, reject) => {
        seen.signal = signal
        entered()
        signal.addEventListener('abort', () => {
          seen.reason = signal.reason
          reject(signal.reason)
        })
      }),
  })
  return { tool, seen, started }
}

/** A tool that ends the run with a hard error once `started` has settled (its sibling is waiting by then). */
function crashAfter(started: Promise<void>) {
  return defineTool({
    name: 'crash',
    description: 'Ends the run',
    input: z.object({}),
    effect: 'read',
    execute: async () => {
      await started
      throw new LoopError('tool_crashed', 'the disk caught fire')
    },
  })
}

/** A middleware that keeps the run it saw, and optionally reads its signal. */
function watchRun(read: boolean): Middleware & { runs: RunContext[]; signals: AbortSignal[] } {
  const runs: RunContext[] = []
  const signals: AbortSignal[] = []
  const layer = Object.assign(
    async (ctx: Parameters<Middleware>[0], next: Parameters<Middleware>[1]) => {
      runs.push(ctx.run)
      if (read) signals.push(ctx.run.signal)
      await next()
    },
    { runs, signals },
  )
  return layer
}

describe('the signal of a run its caller can cancel', () => {
  it('cancels a tool waiting on its signal when the caller aborts, with no timeout layer, and leaves no listener on the caller’s signal', async () => {
    const caller = new AbortController()
    const { tool, seen, started } = waitingTool()
    const agent = createAgent({ model: turnThenAnswer([{ id: 'c1', name: 'wait', args: {} }]), tools: [tool] })
    const outcome = agent.run({ input: 'go', signal: caller.signal })
    await started
    caller.abort('user closed the tab')
    const done = await outcome
    expect(done.status).toBe('stopped')
    expect(done.status === 'stopped' && done.error.kind).toBe('cancelled')
    expect(seen.signal?.aborted).toBe(true)
    expect(getEventListeners(caller.signal, 'abort')).toHaveLength(0)
  })

  it('is a real, enumerable signal for a layer that reads it (a spread copy keeps it), and it aborts with the caller', async () => {
    const caller = new AbortController()
    const watcher = watchRun(true)
    const { tool, started } = waitingTool()
    const agent = createAgent({ model: turnThenAnswer([{ id: 'c1', name: 'wait', args: {} }]), tools: [tool], middleware: [watcher] })
    const outcome = agent.run({ input: 'go', signal: caller.signal })
    await started
    const [run] = watcher.runs
    const [signal] = watcher.signals
    expect(signal).toBeInstanceOf(AbortSignal)
    expect(Object.keys(run as object)).toContain('signal')
    expect({ ...run }.signal).toBe(signal)
    expect(run?.signal).toBe(signal)
    expect(signal?.aborted).toBe(false)
    caller.abort(new Error('stop'))
    expect((await outcome).status).toBe('stopped')
    expect(signal?.aborted).toBe(true)
    expect((signal?.reason as Error | undefined)?.message).toBe('stop')
    expect(getEventListeners(caller.signal, 'abort')).toHaveLength(0)
  })

  it('a hard error of one call stops its siblings; a run signal read after that is born aborted with the hard error', async () => {
    const caller = new AbortController()
    const watcher = watchRun(false)
    const { tool, seen, started } = waitingTool()
    const crash = crashAfter(started)
    const agent = createAgent({
      model: turnThenAnswer([
        { id: 'c1', name: 'wait', args: {} },
        { id: 'c2', name: 'crash', args: {} },
      ]),
      tools: [tool, crash],
      middleware: [watcher],
    })
    const outcome = await agent.run({ input: 'go', signal: caller.signal })
    expect(outcome.status).toBe('stopped')
    expect(outcome.status === 'stopped' && outcome.error.message).toContain('the disk caught fire')
    // The waiting sibling was stopped with the run's reason.
    expect(seen.signal?.aborted).toBe(true)
    expect(LoopError.is(seen.reason) && (seen.reason as LoopError).message).toContain('the disk caught fire')
    const late = watcher.runs[0]?.signal
    expect(late?.aborted).toBe(true)
    expect(LoopError.is(late?.reason)).toBe(true)
    expect(getEventListeners(caller.signal, 'abort')).toHaveLength(0)
    // The caller's own signal is untouched by the run's stop.
    expect(caller.signal.aborted).toBe(false)
  })

  it('a caller signal that is already aborted stops the run before the model is asked', async () => {
    let asked = 0
    const agent = createAgent({
      model: {
        generate: async () => {
          asked++
          return { text: 'done' }
        },
      },
      tools: [ok],
    })
    const outcome = await agent.run({ input: 'go', signal: AbortSignal.abort('too late') })
    expect(outcome.status).toBe('stopped')
    expect(outcome.status === 'stopped' && outcome.error.kind).toBe('cancelled')
    expect(asked).toBe(0)
  })

  it('a long-lived caller signal shared by 2,000 runs keeps no listener, and each run completes', async () => {
    const caller = new AbortController()
    const agent = createAgent({ model: turnThenAnswer([{ id: 'c1', name: 'ok', args: {} }]), tools: [ok] })
    for (let i = 0; i < 2_000; i++) {
      const outcome = await agent.run({ input: 'go', signal: caller.signal })
      expect(outcome.status).toBe('completed')
    }
    expect(getEventListeners(caller.signal, 'abort')).toHaveLength(0)
  })

  it('in a run nobody can cancel, a hard error of one of several calls stops its siblings, through core’s stack and through a wrapper that rebuilds the options', async () => {
    for (const wrap of [false, true]) {
      const { tool, seen, started } = waitingTool()
      const crash = crashAfter(started)
      const inner = createStack({ tools: [tool, crash] })
      // A stack of another make: it hands core's stack only the run and a real signal.
      const rebuilt = (options: DispatchOptions = {}): DispatchOptions => {
        const only: { run?: RunContext; signal?: AbortSignal } = {}
        if (options.run !== undefined) only.run = options.run
        if (options.signal !== undefined) only.signal = options.signal
        return only
      }
      const stack: Stack = wrap ? { ...inner, dispatch: (call, options) => inner.dispatch(call, rebuilt(options)) } : inner
      const agent = createAgent({
        model: turnThenAnswer([
          { id: 'c1', name: 'wait', args: {} },
          { id: 'c2', name: 'crash', args: {} },
        ]),
        stack,
      })
      const outcome = await agent.run({ input: 'go' })
      expect(outcome.status).toBe('stopped')
      expect(outcome.status === 'stopped' && outcome.error.message).toContain('the disk caught fire')
      expect(seen.signal?.aborted).toBe(true)
      expect(LoopError.is(seen.reason) && (seen.reason as LoopError).message).toContain('the disk caught fire')
    }
  })
})
