import { abortReason, type Middleware, type Next, parseOptions, type ToolContext } from '@shallot/core'
import { MAX_TIMER_MS, startTimer } from '@shallot/core/kit'
import { z } from 'zod'
import { Compartment, type Waiter } from './compartment.js'
import { overloadedError } from './overloaded-error.js'

const waitMs = z.number().int().min(0).max(MAX_TIMER_MS)

const MAX_CONCURRENT_DEFAULT = 10
const MAX_QUEUE_DEFAULT = 10
const maxConcurrent = z.number().int().min(1).max(10_000)
const maxQueue = z.number().int().min(0).max(100_000)

/** The options a file can hold too: everything but `key`. */
export const bulkheadDataShape = {
  /** Calls that may run at once under one key. Default 10. */
  maxConcurrent: maxConcurrent.default(MAX_CONCURRENT_DEFAULT),
  /** Calls that may wait for a slot under one key; past that a call is refused at once. 0: nobody waits. Default 10. */
  maxQueue: maxQueue.default(MAX_QUEUE_DEFAULT),
  /** Longest a `read` or `idempotent` call waits in the queue before it is refused. Default 30,000 ms. */
  maxQueueMs: waitMs.default(30_000),
  /**
   * Longest a `write` waits (never more than `maxQueueMs`): a write that runs long after the model
   * asked for it acts on a plan that may be stale. 0: writes never queue. Default 5,000 ms.
   */
  maxWriteQueueMs: waitMs.default(5_000),
}

/**
 * Options of {@link bulkhead}.
 *
 * @example
 * bulkheadOptionsSchema.parse({ maxConcurrent: 4, maxQueue: 10 }).maxQueueMs // 30000
 */
export const bulkheadOptionsSchema = z.strictObject({
  ...bulkheadDataShape,
  /** Which compartment a call belongs to (a host, a tenant). Default: the tool's name. `undefined` lets a call bypass the bulkhead. */
  key: z
    .custom<(ctx: ToolContext) => string | undefined>((v) => typeof v === 'function', {
      message: 'must be a function (ctx) => string | undefined',
    })
    .optional(),
})

/**
 * Emits from a callback that runs on behalf of another call (a slot handed over, a timer, an
 * abort): a throwing listener must not strand the waiter or lose the slot.
 */
function tell(ctx: ToolContext, type: string, fields: Record<string, unknown>): void {
  try {
    ctx.emit(type, fields)
  } catch (err) {
    try {
      ctx.log.warn({ err, type }, 'bulkhead: an event listener threw')
    } catch {
      // Nowhere left to report to.
    }
  }
}

/** What {@link bulkhead} accepts. */
export type BulkheadOptions = z.input<typeof bulkheadOptionsSchema>

/**
 * Keeps at most `maxConcurrent` calls running at once per key (the tool's name, or what `key(ctx)` says: a
 * host, a tenant), with at most `maxQueue` more waiting in arrival order. A call past the queue, or
 * one that waited `maxQueueMs` (`maxWriteQueueMs` for a write), is refused with a soft
 * `overloaded` the model reads; it never ran, so it is `safeToRepeat`. A queued call whose signal
 * aborts (the run was cancelled, an outer deadline passed) leaves the queue at once. No timers
 * outside the queue: a call that finds a free slot costs a map lookup and two counter updates.
 *
 * @example
 * const stack = createStack({
 *   tools: [search, getTicket],
 *   middleware: [bulkhead({ maxConcurrent: 4, maxQueue: 10, key: (ctx) => hostOf(ctx.call.name) }), retry(), timeout({ ms: 5000 })],
 * })
 */
export function bulkhead(options?: BulkheadOptions): Middleware {
  const {
    maxConcurrent: limit,
    maxQueue: queue,
    maxQueueMs,
    maxWriteQueueMs,
    key: keyOf,
  } = parseOptions('bulkhead()', bulkheadOptionsSchema, options)
  const writeQueueMs = Math.min(maxQueueMs, maxWriteQueueMs)
  const compartments = new Map<string, Compartment>()

  function release(key: string, compartment: Compartment): void {
    if (compartment.release() && compartments.get(key) === compartment) compartments.delete(key)
  }

  function refuseAtOnce(ctx: ToolContext, key: string, compartment: Compartment) {
    const queued = compartment.queued
    ctx.emit('bulkhead.refused', { key, reason: 'queue_full', running: compartment.running, queued, waitedMs: 0 })
    return overloadedError({ tool: ctx.call.name, key, reason: 'queue_full', limit, queued, waitedMs: 0 })
  }

  function wait(ctx: ToolContext, key: string, compartment: Compartment, maxMs: number): Promise<void> {
    const signal = ctx.signal
    if (signal.aborted) return Promise.reject(abortReason(signal))
    const started = ctx.clock.now()
    ctx.emit('bulkhead.queued', { key, running: compartment.running, position: compartment.queued + 1 })
    return new Promise<void>((resolve, reject) => {
      const leave = () => {
        compartment.leave(waiter)
        cancelTimer()
        signal.removeEventListener('abort', onAbort)
        return ctx.clock.now() - started
      }
      const waiter: Waiter = {
        admit() {
          const waitedMs = leave()
          resolve()
          tell(ctx, 'bulkhead.admitted', { key, waitedMs })
        },
      }
      const onAbort = () => {
        const waitedMs = leave()
        reject(abortReason(signal))
        tell(ctx, 'bulkhead.cancelled', { key, waitedMs })
      }
      const cancelTimer = startTimer(ctx.clock, maxMs, () => {
        const waitedMs = leave()
        const queued = compartment.queued
        reject(overloadedError({ tool: ctx.call.name, key, reason: 'queue_timeout', limit, queued, waitedMs }))
        tell(ctx, 'bulkhead.refused', { key, reason: 'queue_timeout', running: compartment.running, queued, waitedMs })
      })
      compartment.enqueue(waiter)
      signal.addEventListener('abort', onAbort, { once: true })
    })
  }

  return async function bulkhead(ctx: ToolContext, next: Next): Promise<void> {
    const tool = ctx.tool
    if (tool === undefined) return next()
    const key = keyOf === undefined ? tool.name : keyOf(ctx)
    if (key === undefined) return next()
    const current = ctx.signal
    if (current.aborted) throw abortReason(current)
    let compartment = compartments.get(key)
    if (compartment === undefined) {
      compartment = new Compartment(limit, queue)
      compartments.set(key, compartment)
    }
    if (!compartment.tryAcquire()) {
      const maxMs = tool.effect === 'write' ? writeQueueMs : maxQueueMs
      if (maxMs === 0 || !compartment.hasRoom()) throw refuseAtOnce(ctx, key, compartment)
      // On admission the slot is handed over: the compartment already counts this call as running.
      await wait(ctx, key, compartment, maxMs)
    }
    try {
      await next()
    } finally {
      release(key, compartment)
    }
  }
}
