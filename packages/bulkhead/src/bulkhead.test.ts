import { getEventListeners } from 'node:events'
import {
  createRun,
  createStack,
  defineTool,
  LoopError,
  type Middleware,
  OptionsError,
  type StackEvent,
  type ToolEffect,
  ToolError,
  type ToolResult,
} from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { bulkhead } from './index.js'

/** A tool that takes `ms` of virtual time and counts how many of its calls run at once. */
function setup(options: Parameters<typeof bulkhead>[0], { ms = 100, effects = ['read'] as ToolEffect[], outer = [] as Middleware[] } = {}) {
  const clock = manualClock()
  const seen = { running: 0, peak: 0, started: [] as string[] }
  const tools = effects.map((effect) =>
    defineTool({
      name: `${effect}_tool`,
      description: `a slow ${effect}`,
      input: z.object({ n: z.number(), host: z.string().optional() }),
      effect,
      execute: async ({ n }, { signal }) => {
        seen.started.push(`${effect}:${n}`)
        seen.running++
        seen.peak = Math.max(seen.peak, seen.running)
        try {
          await clock.sleep(ms, signal)
          return n
        } finally {
          seen.running--
        }
      },
    }),
  )
  const stack = createStack({ middleware: [...outer, bulkhead(options)], tools, clock })
  const events: StackEvent[] = []
  stack.on((event) => {
    // The layers' own events; the stack's call.started / call.finished are asserted in core.
    if (!event.type.startsWith('call.')) events.push(event)
  })
  return { clock, seen, stack, events }
}

const settle = <T>(p: Promise<T>) => {
  const box: { value?: T; error?: unknown; done: boolean } = { done: false }
  p.then(
    (value) => Object.assign(box, { value, done: true }),
    (error: unknown) => Object.assign(box, { error, done: true }),
  )
  return box
}

const flush = async () => {
  for (let i = 0; i < 20; i++) await Promise.resolve()
}

describe('bulkhead', () => {
  it('100 concurrent calls with limit 4 and queue 10: 4 run at any moment, 10 wait, 86 are refused softly at once', async () => {
    const { clock, seen, stack } = setup({ maxConcurrent: 4, maxQueue: 10 })
    const calls = Array.from({ length: 100 }, (_, n) => settle(stack.dispatch({ id: `c${n}`, name: 'read_tool', args: { n } })))
    await flush()
    const refused = calls.filter((c) => c.done)
    expect(refused).toHaveLength(86)
    for (const { value } of refused) {
      expect(value?.ok).toBe(false)
      expect(value?.error).toMatchObject({ code: 'overloaded', category: 'transient', safeToRepeat: true, retryable: false })
      expect(value?.error?.hint).toMatch(/did not run/)
      expect(value?.content).toContain("tool 'read_tool' is overloaded: 4 calls are running and 10 are waiting")
    }
    expect(seen.running).toBe(4)
    // Every 100 ms the four running calls finish and the next four of the queue start, in arrival order.
    const runningOverTime: number[] = []
    for (let step = 0; step < 4; step++) {
      runningOverTime.push(seen.running)
      await clock.advance(100)
    }
    expect(runningOverTime).toEqual([4, 4, 4, 2])
    expect(seen.peak).toBe(4)
    expect(seen.started).toEqual(Array.from({ length: 14 }, (_, n) => `read:${n}`))
    const served = calls.filter((c) => c.value?.ok)
    expect(served.map((c) => c.value?.value)).toEqual(Array.from({ length: 14 }, (_, n) => n))
    expect(clock.pending).toBe(0)
  })

  it('a queued call whose run is cancelled leaves the queue at once, leaving no listener, and its place goes to the next caller', async () => {
    const { clock, seen, stack, events } = setup({ maxConcurrent: 1, maxQueue: 1 })
    const controller = new AbortController()
    const run = createRun({ signal: controller.signal })
    const first = settle(stack.dispatch({ id: 'a', name: 'read_tool', args: { n: 1 } }))
    const queued = settle(stack.dispatch({ id: 'b', name: 'read_tool', args: { n: 2 } }, { run }))
    await flush()
    expect(getEventListeners(controller.signal, 'abort').length).toBeGreaterThan(0)
    controller.abort(new Error('user pressed stop'))
    await flush()
    expect(queued.done).toBe(true)
    expect(queued.error).toSatisfy(LoopError.is)
    expect((queued.error as LoopError).kind).toBe('cancelled')
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0)
    expect(events.map((e) => e.type)).toContain('bulkhead.cancelled')
    // The freed place takes a newcomer instead of refusing it.
    const third = settle(stack.dispatch({ id: 'c', name: 'read_tool', args: { n: 3 } }))
    await flush()
    expect(third.done).toBe(false)
    await clock.runAll()
    expect(first.value?.value).toBe(1)
    expect(third.value?.value).toBe(3)
    expect(seen.started).toEqual(['read:1', 'read:3'])
  })

  it('refuses a read that waited maxQueueMs, and it never runs afterwards', async () => {
    const { clock, seen, stack, events } = setup({ maxConcurrent: 1, maxQueue: 5, maxQueueMs: 50 })
    const first = settle(stack.dispatch({ id: 'a', name: 'read_tool', args: { n: 1 } }))
    const late = settle(stack.dispatch({ id: 'b', name: 'read_tool', args: { n: 2 } }))
    await clock.advance(49)
    expect(late.done).toBe(false)
    await clock.advance(1)
    expect(late.value?.error).toMatchObject({ code: 'overloaded', safeToRepeat: true })
    expect(events.find((e) => e.type === 'bulkhead.refused')).toMatchObject({ callId: 'b', reason: 'queue_timeout', waitedMs: 50 })
    expect(late.value?.content).toContain('no slot of 1 came free within 0.1s')
    await clock.runAll()
    expect(first.value?.ok).toBe(true)
    expect(seen.started).toEqual(['read:1'])
  })

  it('never queues a write past maxWriteQueueMs, even when reads may wait longer', async () => {
    const { clock, seen, stack, events } = setup(
      { maxConcurrent: 1, maxQueue: 5, maxQueueMs: 10_000, maxWriteQueueMs: 300 },
      { ms: 1000, effects: ['write'] },
    )
    const first = settle(stack.dispatch({ id: 'a', name: 'write_tool', args: { n: 1 } }))
    const second = settle(stack.dispatch({ id: 'b', name: 'write_tool', args: { n: 2 } }))
    await clock.advance(300)
    expect(second.value?.error).toMatchObject({ code: 'overloaded', safeToRepeat: true })
    expect(events.find((e) => e.type === 'bulkhead.refused')).toMatchObject({ callId: 'b', reason: 'queue_timeout', waitedMs: 300 })
    await clock.runAll()
    expect(first.value?.ok).toBe(true)
    expect(seen.started).toEqual(['write:1'])
  })

  it('with maxWriteQueueMs 0 a write is refused at once instead of queued, while a read still queues', async () => {
    const { clock, stack, events } = setup(
      { maxConcurrent: 1, maxQueue: 5, maxWriteQueueMs: 0, key: () => 'one-host' },
      { effects: ['read', 'write'] },
    )
    const running = settle(stack.dispatch({ id: 'a', name: 'read_tool', args: { n: 1 } }))
    const write = settle(stack.dispatch({ id: 'b', name: 'write_tool', args: { n: 2 } }))
    const read = settle(stack.dispatch({ id: 'c', name: 'read_tool', args: { n: 3 } }))
    await flush()
    expect(write.value?.error).toMatchObject({ code: 'overloaded' })
    expect(events.find((e) => e.type === 'bulkhead.refused')).toMatchObject({ callId: 'b', reason: 'queue_full', key: 'one-host' })
    expect(write.value?.content).toContain("tool 'write_tool' (one-host) is overloaded")
    expect(read.done).toBe(false)
    await clock.runAll()
    expect([running.value?.value, read.value?.value]).toEqual([1, 3])
  })

  it('keeps one compartment per key: calls to one host queue, another host runs, undefined bypasses', async () => {
    const key = (ctx: { call: { args: unknown } }) => (ctx.call.args as { host?: string }).host
    const { clock, seen, stack } = setup({ maxConcurrent: 1, maxQueue: 1, key })
    const a1 = settle(stack.dispatch({ id: '1', name: 'read_tool', args: { n: 1, host: 'a.example' } }))
    const a2 = settle(stack.dispatch({ id: '2', name: 'read_tool', args: { n: 2, host: 'a.example' } }))
    const b1 = settle(stack.dispatch({ id: '3', name: 'read_tool', args: { n: 3, host: 'b.example' } }))
    const free = [4, 5, 6].map((n) => settle(stack.dispatch({ id: `${n}`, name: 'read_tool', args: { n } })))
    await flush()
    expect(seen.running).toBe(5)
    await clock.runAll()
    expect([a1, a2, b1, ...free].map((c) => c.value?.value)).toEqual([1, 2, 3, 4, 5, 6])
    expect(seen.started.indexOf('read:2')).toBeGreaterThan(seen.started.indexOf('read:6'))
  })

  it('frees the slot whatever the call ends with: a soft error, a thrown LoopError (passed through untouched)', async () => {
    const clock = manualClock()
    const hard = new LoopError('fatal', 'stop here')
    let mode: 'soft' | 'hard' | 'ok' = 'soft'
    const tool = defineTool({
      name: 'flaky',
      description: 'fails as told',
      input: z.object({}),
      effect: 'read',
      execute: async () => {
        if (mode === 'soft') throw new ToolError('upstream_error', 'down', { category: 'transient' })
        if (mode === 'hard') throw hard
        return 'fine'
      },
    })
    const stack = createStack({ middleware: [bulkhead({ maxConcurrent: 1, maxQueue: 0 })], tools: [tool], clock })
    expect((await stack.dispatch({ id: '1', name: 'flaky', args: {} })).error?.code).toBe('upstream_error')
    mode = 'hard'
    await expect(stack.dispatch({ id: '2', name: 'flaky', args: {} })).rejects.toBe(hard)
    mode = 'ok'
    const results: ToolResult[] = await Promise.all([stack.dispatch({ id: '3', name: 'flaky', args: {} })])
    expect(results[0]?.value).toBe('fine')
  })

  it('a listener that throws on a handed-over slot strands nobody: the waiter runs and the slot is freed', async () => {
    const { clock, stack } = setup({ maxConcurrent: 1, maxQueue: 1 })
    stack.on((event) => {
      if (event.type === 'bulkhead.admitted') throw new Error('listener bug')
    })
    const calls = [1, 2].map((n) => settle(stack.dispatch({ id: `${n}`, name: 'read_tool', args: { n } })))
    await clock.runAll()
    expect(calls.map((c) => c.value?.value)).toEqual([1, 2])
    const third = settle(stack.dispatch({ id: '3', name: 'read_tool', args: { n: 3 } }))
    await clock.runAll()
    expect(third.value?.value).toBe(3)
  })

  it('lets an unknown tool through to the dispatcher, which answers unknown_tool', async () => {
    const { stack } = setup({ maxConcurrent: 1 })
    expect((await stack.dispatch({ id: '1', name: 'nope', args: {} })).error?.code).toBe('unknown_tool')
  })

  it('emits queued, admitted and refused in order', async () => {
    const { clock, stack, events } = setup({ maxConcurrent: 1, maxQueue: 1 })
    const calls = [1, 2, 3].map((n) => settle(stack.dispatch({ id: `${n}`, name: 'read_tool', args: { n } })))
    await clock.runAll()
    expect(calls.every((c) => c.done)).toBe(true)
    expect(events.map((e) => [e.type, e.callId])).toEqual([
      ['bulkhead.queued', '2'],
      ['bulkhead.refused', '3'],
      ['bulkhead.admitted', '2'],
    ])
  })

  it.each([
    [{ maxConcurrent: 0 }, 'maxConcurrent'],
    [{ maxConcurrent: Number.NaN }, 'maxConcurrent'],
    [{ maxConcurrent: Number.POSITIVE_INFINITY }, 'maxConcurrent'],
    [{ maxConcurrent: 2.5 }, 'maxConcurrent'],
    [{ maxQueue: -1 }, 'maxQueue'],
    [{ limit: 2 }, 'limit'],
    [{ queue: 1 }, 'queue'],
    [{ maxQueueMs: 2 ** 31 }, 'maxQueueMs'],
    [{ key: 'host' }, 'key'],
    [{ limt: 4 }, 'limt'],
  ])('refuses %j with an error naming %s', (options, name) => {
    expect(() => bulkhead(options as never)).toThrow(OptionsError)
    expect(() => bulkhead(options as never)).toThrow(name)
  })
})
