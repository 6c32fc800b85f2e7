import { type AnyTool, LoopError, type Next, type ToolContext, ToolError } from '@shallot/core'
import { callNext, canonicalJson, type Flight } from '@shallot/core/kit'
import { askReconciler, type Reconciled } from './ask-reconciler.js'
import { claimKey } from './claim-key.js'
import { type Claimed, type Guarded, type Layer, Reclaim, refuse, replay, storeFailed } from './guarded-call.js'
import { complete, settleAs } from './record-outcome.js'
import { notTakenEffect, outcomeUnknown, stillUnknown } from './refusals.js'
import { mayHaveLanded, settleAction } from './settle-action.js'
import type { SharedOutcome } from './shared-calls.js'

type InFlight = Flight<SharedOutcome | undefined>

/** Waits for identical calls in flight in this process: replays the first one's success, shares its refusal, or leads once none is left. */
export async function waitThenLead(layer: Layer, ctx: ToolContext, next: Next, call: Guarded): Promise<void> {
  const { calls } = layer
  for (let running = calls.get(call.storeKey); running !== undefined; running = calls.get(call.storeKey)) {
    ctx.emit('idempotency.waiting', { key: call.key, where: 'in_process' })
    const outcome = await running.wait(ctx.signal)
    if (outcome?.argsHash !== call.argsHash) continue
    if (!outcome.ok) throw refuse(ctx, call, outcome.refusal)
    replay(ctx, call, outcome.json === undefined ? undefined : JSON.parse(outcome.json), 'in_process')
    return
  }
  await lead(layer, ctx, next, call)
}

/** A call this process leads: the layer, the call's context and inner layers, the call as guarded, and its flight. */
interface Lead {
  readonly layer: Layer
  readonly ctx: ToolContext
  readonly next: Next
  readonly call: Guarded
  readonly flight: InFlight
}

/**
 * Leads the call, the one owner of its key in this process until it settles: claims the key, runs
 * the inner layers, settles the record, and tells waiting duplicates what to see.
 */
export async function lead(layer: Layer, ctx: ToolContext, next: Next, call: Guarded): Promise<void> {
  const flight = layer.calls.lead(call.storeKey)
  let claim: Claimed
  try {
    claim = await claimKey(layer, ctx, call)
  } catch (err) {
    throw notClaimed(call, flight, err)
  }
  return proceed({ layer, ctx, next, call, flight }, claim)
}

/** Ends the flight of a call whose claim threw: a refusal is what waiting duplicates share. */
function notClaimed(call: Guarded, flight: InFlight, err: unknown): unknown {
  flight.land(ToolError.is(err) ? { argsHash: call.argsHash, ok: false, refusal: err } : undefined)
  return err
}

/** Replays a stored result, or runs the inner layers under the claimed token and settles the record. */
function proceed(l: Lead, claim: Claimed): Promise<void> {
  if (claim instanceof Reclaim) return takeOver(l, claim.reason)
  const { layer, ctx, call, flight } = l
  if (typeof claim !== 'string') {
    let outcome: SharedOutcome | undefined
    try {
      const { value } = claim
      replay(ctx, call, value, 'store')
      outcome = { argsHash: call.argsHash, ok: true, json: value === undefined ? undefined : JSON.stringify(value) }
    } catch (err) {
      return Promise.reject(err)
    } finally {
      flight.land(outcome)
    }
    return Promise.resolve()
  }
  // The terminal counts every real invocation of the tool: if none happened, nothing reached the world.
  const executionsBefore = ctx.executions
  // Wall-clock, as the service a reconciler searches keeps its own records: no attempt of this call was sent before it.
  const sentAt = Date.now()
  return callNext(l.next).then(
    () => succeeded(l, claim),
    (err: unknown) => {
      const reachedTool = ctx.executions !== executionsBefore
      if (call.reconcilable && !LoopError.is(err) && !ctx.signal.aborted && mayHaveLanded(err, reachedTool))
        return reconcileFailure(l, { token: claim, sentAt }, err)
      const action = settleAction(call.effect, err, reachedTool)
      // The call's own error is what propagates, whatever settling it did.
      const rethrow = () => {
        flight.land(undefined)
        throw err
      }
      return settleAs(layer, ctx, call, claim, action).then(rethrow, rethrow)
    },
  )
}

/** Stores a success and lands the flight: waiting duplicates replay the result from the text the store got. */
async function succeeded({ layer, ctx, call, flight }: Lead, token: string): Promise<void> {
  let json: string | undefined
  try {
    const value = ctx.result?.value
    json = value === undefined ? undefined : canonicalJson(value)
    // complete() reports a store's failure and resolves; should that ever throw, the flight still lands.
    await complete(layer, ctx, call, token, json)
  } catch (err) {
    flight.land(undefined)
    throw err
  }
  flight.land({ argsHash: call.argsHash, ok: true, json })
}

/** Asks the tool's reconciler; a stop while asking (cancellation, a hard error) leaves the record unknown, then propagates. */
async function askOrSettleUnknown({ layer, ctx, call, flight }: Lead, token: string, sentAt?: number): Promise<Reconciled> {
  try {
    return await askReconciler(ctx, ctx.tool as AnyTool, call.key, layer.limits, sentAt)
  } catch (stop) {
    await settleAs(layer, ctx, call, token, 'unknown')
    flight.land(undefined)
    throw stop
  }
}

/**
 * A write failed and left its outcome unknown, and its tool can reconcile: asks while the call
 * still owns the record. Applied: the call succeeds with that result, stored. Not applied: the
 * record is released and the error says repeating is safe. Unknown: recorded as such, the error
 * saying what was tried — except for a keyed (`idempotent`) tool, whose record is released, as its
 * key makes the repeat safe.
 */
async function reconcileFailure(l: Lead, { token, sentAt }: { token: string; sentAt: number }, err: unknown): Promise<void> {
  const { layer, ctx, call, flight } = l
  const reconciled = await askOrSettleUnknown(l, token, sentAt)
  if (reconciled.outcome === 'applied') {
    ctx.result = { value: JSON.parse(reconciled.json) }
    return succeeded(l, token)
  }
  await settleAs(layer, ctx, call, token, reconciled.outcome === 'not_applied' ? 'release' : settleAction(call.effect, err, true))
  flight.land(undefined)
  throw reconciled.outcome === 'not_applied' ? notTakenEffect(err) : stillUnknown(err, reconciled, call.effect === 'idempotent')
}

/**
 * An identical earlier call's outcome is unknown and the tool can reconcile: takes the record over
 * (the store's `reclaim`), then asks. Applied: replays that result, now stored. Not applied: runs the
 * call under the record. Unknown: records it as such again and refuses, saying what was tried.
 */
async function takeOver(l: Lead, reason: Reclaim['reason']): Promise<void> {
  const { layer, ctx, call, flight } = l
  let token: unknown
  try {
    token = await layer.store.reclaim?.(call.storeKey, call.argsHash, layer.leaseMs, layer.ttlMs)
  } catch (err) {
    storeFailed(ctx, call, 'reclaim', err)
    throw notClaimed(call, flight, refuse(ctx, call, outcomeUnknown(call.tool, reason, call.key)))
  }
  if (typeof token !== 'string' || token === '') {
    // Another caller took the record over or settled it first: ask the store once more (and wait, if it is in flight).
    let claim: Claimed
    try {
      claim = await claimKey(layer, ctx, call)
    } catch (err) {
      throw notClaimed(call, flight, err)
    }
    if (claim instanceof Reclaim) throw notClaimed(call, flight, refuse(ctx, call, outcomeUnknown(call.tool, claim.reason, call.key)))
    return proceed(l, claim)
  }
  ctx.emit('idempotency.reclaimed', { key: call.key, reason })
  // The attempt in question was sent by an earlier call, perhaps in another process: its send time is not known here.
  const reconciled = await askOrSettleUnknown(l, token)
  if (reconciled.outcome === 'applied') {
    ctx.result = { value: JSON.parse(reconciled.json), replayed: true }
    return succeeded(l, token)
  }
  if (reconciled.outcome === 'not_applied') return proceed(l, token)
  await settleAs(layer, ctx, call, token, 'unknown')
  throw notClaimed(call, flight, refuse(ctx, call, outcomeUnknown(call.tool, reason, call.key, reconciled)))
}
