import { abortReason, type ToolContext, type ToolError } from '@shallot/core'
import { checkBegin, newToken } from './check-begin.js'
import { type Claimed, type Guarded, isPromise, type Layer, Reclaim, refuse, storeFailed } from './guarded-call.js'
import { idempotencyMismatch, outcomeUnknown, stillInFlight, storeUnavailable } from './refusals.js'

async function sleep(ctx: ToolContext, ms: number): Promise<void> {
  try {
    await ctx.clock.sleep(ms, ctx.signal)
  } catch (err) {
    throw ctx.signal.aborted ? abortReason(ctx.signal) : err
  }
}

function corrupt(ctx: ToolContext, call: Guarded, problem: string): ToolError {
  ctx.emit('idempotency.corrupt', { key: call.key, problem })
  ctx.log.warn(
    { key: call.key, storeKey: call.storeKey, problem },
    'idempotency record is corrupt; identical calls are refused until it expires or is removed',
  )
  return refuse(ctx, call, outcomeUnknown(call.tool, 'corrupt', call.key))
}

/**
 * What one `begin` answered: ownership or a stored result (the claim is over), or `undefined`
 * while another process holds the key. Refusals throw.
 */
function claimed(layer: Layer, ctx: ToolContext, call: Guarded, answer: unknown): Claimed | undefined {
  const token = newToken(answer)
  if (token !== undefined) return token
  // Checked here too, so a store that trusts what it reads still cannot make a write run twice.
  const begun = checkBegin(answer)
  switch (begun.status) {
    case 'new':
      return begun.token
    case 'done':
      return begun.result
    case 'mismatch':
      throw refuse(ctx, call, idempotencyMismatch(call.tool, call.key))
    case 'unknown':
      if (begun.reason === 'corrupt') throw corrupt(ctx, call, begun.problem)
      if (call.reconcilable && layer.canReclaim) return new Reclaim(begun.reason)
      throw refuse(ctx, call, outcomeUnknown(call.tool, begun.reason, call.key))
    case 'in_flight':
      return undefined
  }
}

function beginFailed(ctx: ToolContext, call: Guarded, err: unknown): ToolError {
  storeFailed(ctx, call, 'begin', err)
  return refuse(ctx, call, storeUnavailable(call.tool, err))
}

/**
 * Claims the key in the store: its token, or the stored result to replay. A synchronous store
 * (memory, SQLite) answers without a single await; while another process holds the key, polls.
 */
export function claimKey(layer: Layer, ctx: ToolContext, call: Guarded): Claimed | Promise<Claimed> {
  const { leaseMs, ttlMs } = layer
  let answer: unknown
  try {
    answer = layer.store.begin(call.storeKey, call.argsHash, leaseMs, ttlMs)
  } catch (err) {
    throw beginFailed(ctx, call, err)
  }
  if (isPromise(answer)) return poll(layer, ctx, call, ctx.clock.now(), answer)
  return claimed(layer, ctx, call, answer) ?? poll(layer, ctx, call, ctx.clock.now(), undefined)
}

async function poll(
  layer: Layer,
  ctx: ToolContext,
  call: Guarded,
  started: number,
  pending: PromiseLike<unknown> | undefined,
): Promise<Claimed> {
  const { waitMs, pollMs, leaseMs, ttlMs } = layer
  let waiting = false
  for (let first = pending; ; first = undefined) {
    if (first !== undefined) {
      let answer: unknown
      try {
        answer = await first
      } catch (err) {
        throw beginFailed(ctx, call, err)
      }
      const done = claimed(layer, ctx, call, answer)
      if (done !== undefined) return done
    }
    const waited = ctx.clock.now() - started
    if (waited >= waitMs) throw refuse(ctx, call, stillInFlight(call.tool, call.key, waited))
    if (!waiting) ctx.emit('idempotency.waiting', { key: call.key, where: 'store' })
    waiting = true
    await sleep(ctx, Math.min(pollMs, waitMs - waited))
    let answer: unknown
    try {
      answer = await layer.store.begin(call.storeKey, call.argsHash, leaseMs, ttlMs)
    } catch (err) {
      throw beginFailed(ctx, call, err)
    }
    const done = claimed(layer, ctx, call, answer)
    if (done !== undefined) return done
  }
}
