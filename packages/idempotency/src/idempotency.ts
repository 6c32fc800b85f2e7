import {
  type AnyTool,
  abortReason,
  type Json,
  LoopError,
  type Middleware,
  type Next,
  type ToolContext,
  type ToolEffect,
  ToolError,
  trustedMiddleware,
} from '@shallot/core'
import { callNext, canonicalJson, emitFresh, optionsParser } from '@shallot/core/kit'
import { askReconciler, type Reconciled, type ReconcileLimits } from './ask-reconciler.js'
import { checkBegin, newToken } from './check-begin.js'
import { derivedKey, keyProblem, scopeProblem, storeKeyOf } from './idempotency-key.js'
import { type IdempotencyOptions, idempotencyOptionsSchema } from './idempotency-options.js'
import type { StoredResult } from './idempotency-store.js'
import { memoryBeginForToken, memoryCompleteWithText, memoryIdempotencyStore, memoryStoreClock } from './memory-idempotency-store.js'
import {
  idempotencyMismatch,
  invalidKey,
  invalidScope,
  notTakenEffect,
  outcomeUnknown,
  stillInFlight,
  stillUnknown,
  storeUnavailable,
} from './refusals.js'
import { type SettleAction, settleAction } from './settle-action.js'
import { awaited, type InFlight, inFlight, landed, sharedCalls, waitFor } from './shared-calls.js'
import { stackScopes } from './stack-scopes.js'

declare module '@shallot/core' {
  interface ToolContext {
    /**
     * Set by `idempotency()`: the call's key, stable across retries and resumes. The stack forwards
     * it to the tool's `execute` (`idempotencyKey`), which may pass it upstream.
     */
    idempotencyKey?: string
  }
}

const isPromise = (value: unknown): value is PromiseLike<unknown> => typeof (value as PromiseLike<unknown> | null)?.then === 'function'

/** What claiming a key gave when the earlier call's outcome is unknown and the tool can reconcile it: take the record over and ask. */
class Reclaim {
  constructor(readonly reason: 'recorded' | 'lease_expired') {}
}

/**
 * What claiming a key gave: the token that settles the record (a string: the call owns the key
 * now), the stored success to replay, or an unknown outcome to reconcile.
 */
type Claimed = string | StoredResult | Reclaim

const parseIdempotencyOptions = optionsParser('idempotency()', idempotencyOptionsSchema)

/** One guarded call, as this layer tracks it. */
interface Guarded {
  readonly tool: string
  readonly effect: ToolEffect
  readonly key: string
  readonly storeKey: string
  readonly argsHash: string
  /** The tool has a `reconcile` to ask after an unknown outcome. */
  readonly reconcilable: boolean
}

/**
 * No side effect twice. Gives every `write` and `idempotent` call one key, stable across retries
 * and resumes (`ctx.idempotencyKey`, forwarded to the tool); replays a stored success instead of
 * running the tool again (`replayed: true`); makes a duplicate wait for the identical call in
 * flight; refuses an identical call whose first attempt may have reached the world
 * (`outcome_unknown`) and an explicit key reused with other arguments (`idempotency_mismatch`).
 * Sits outside circuit breaker and retry, so it sees each logical call's final outcome.
 *
 * @example
 * const stack = createStack({
 *   tools: [chargeCard],
 *   middleware: [panicCatcher(), stuckLoop(), idempotency({ store: sqliteStore({ path: 'agent.db' }), scope: 'tenant-a' }), retry(), timeout()],
 * })
 */
export function idempotency(options?: IdempotencyOptions): Middleware {
  const opts = parseIdempotencyOptions(options)
  const store = opts.store ?? memoryIdempotencyStore()
  const calls = sharedCalls(store)
  // The memory store takes the result as the text serialised below; any other store gets it as JSON values.
  const completeText = memoryCompleteWithText(store)
  // And answers a new claim with its token alone; `begin` of any other store is checked as it answers.
  const beginForToken = memoryBeginForToken(store)
  // And reads this clock: when it is the stack's too, the stored event's time is the reading the record's expiry is counted from.
  const storeClock = memoryStoreClock(store)
  const guardedEffects = new Set<ToolEffect>(opts.effects)
  // The layer's own store is kept apart by stack; a store the host passes is shared as given.
  const scopeInStore = opts.store === undefined ? stackScopes() : (_ctx: ToolContext, scope: string) => scope
  const { ttlMs, leaseMs, waitMs, pollMs } = opts
  // A reconciliation ends within half the lease, so the record is still the caller's when it settles.
  const limits: ReconcileLimits = {
    attempts: opts.reconcileAttempts,
    delayMs: opts.reconcileDelayMs,
    timeoutMs: opts.reconcileTimeoutMs,
    withinMs: leaseMs / 2,
  }
  // A store without reclaim keeps refusing an identical call after an unknown outcome.
  const canReclaim = typeof store.reclaim === 'function'

  function refuse(ctx: ToolContext, call: Pick<Guarded, 'key'> | undefined, error: ToolError): ToolError {
    ctx.emit('idempotency.refused', { key: call?.key, code: error.code })
    ctx.log.info({ key: call?.key, code: error.code }, 'idempotency refused a call')
    return error
  }

  function replay(ctx: ToolContext, call: Guarded, value: unknown, from: 'store' | 'in_process'): void {
    ctx.result = { value, replayed: true }
    ctx.emit('idempotency.replayed', { key: call.key, from })
    ctx.log.info({ key: call.key, from }, 'replayed a stored result instead of running the tool')
  }

  function storeFailed(ctx: ToolContext, call: Guarded, op: string, err: unknown): void {
    ctx.emit('idempotency.store_error', { key: call.key, op })
    ctx.log.warn({ key: call.key, op, err }, 'idempotency store failed')
  }

  function scopeOf(ctx: ToolContext, tool: string): string {
    if (typeof opts.scope === 'string') return opts.scope
    const scope = opts.scope(ctx)
    const problem = scopeProblem(scope)
    if (problem !== undefined) throw refuse(ctx, undefined, invalidScope(tool, problem))
    return scope
  }

  function keyOf(ctx: ToolContext, tool: string, scope: string, argsHash: string, args: unknown): string {
    let key: unknown
    let source: string
    if (opts.key !== undefined) {
      key = opts.key(ctx, args)
      source = 'the key function'
    } else if (opts.keyFrom !== undefined) {
      key = typeof args === 'object' && args !== null ? (args as Record<string, unknown>)[opts.keyFrom] : undefined
      source = `argument "${opts.keyFrom}"`
      if (key === undefined) throw refuse(ctx, undefined, invalidKey(tool, 'is missing', source))
      if (typeof key === 'number' && Number.isFinite(key)) key = String(key)
    } else {
      return derivedKey(scope, ctx.run.id, tool, argsHash)
    }
    const problem = keyProblem(key)
    if (problem !== undefined) throw refuse(ctx, undefined, invalidKey(tool, problem, source))
    return key as string
  }

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
  function claimed(ctx: ToolContext, call: Guarded, answer: unknown): Claimed | undefined {
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
        if (call.reconcilable && canReclaim) return new Reclaim(begun.reason)
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
  function claimKey(ctx: ToolContext, call: Guarded): Claimed | Promise<Claimed> {
    let answer: unknown
    try {
      answer =
        beginForToken === undefined
          ? store.begin(call.storeKey, call.argsHash, leaseMs, ttlMs)
          : beginForToken(call.storeKey, call.argsHash, leaseMs, ttlMs)
    } catch (err) {
      throw beginFailed(ctx, call, err)
    }
    // Only the memory store's token claim answers a string; from any other store a string is a corrupt answer.
    if (beginForToken !== undefined && typeof answer === 'string') return answer
    if (isPromise(answer)) return poll(ctx, call, ctx.clock.now(), answer)
    return claimed(ctx, call, answer) ?? poll(ctx, call, ctx.clock.now(), undefined)
  }

  async function poll(ctx: ToolContext, call: Guarded, started: number, pending: PromiseLike<unknown> | undefined): Promise<Claimed> {
    let waiting = false
    for (let first = pending; ; first = undefined) {
      if (first !== undefined) {
        let answer: unknown
        try {
          answer = await first
        } catch (err) {
          throw beginFailed(ctx, call, err)
        }
        const done = claimed(ctx, call, answer)
        if (done !== undefined) return done
      }
      const waited = ctx.clock.now() - started
      if (waited >= waitMs) throw refuse(ctx, call, stillInFlight(call.tool, call.key, waited))
      if (!waiting) ctx.emit('idempotency.waiting', { key: call.key, where: 'store' })
      waiting = true
      await sleep(ctx, Math.min(pollMs, waitMs - waited))
      let answer: unknown
      try {
        answer = await store.begin(call.storeKey, call.argsHash, leaseMs, ttlMs)
      } catch (err) {
        throw beginFailed(ctx, call, err)
      }
      const done = claimed(ctx, call, answer)
      if (done !== undefined) return done
    }
  }

  /** Settles the record of a call that failed; never throws, so the call's own error is what propagates. */
  function settleFailure(ctx: ToolContext, call: Guarded, token: string, error: unknown, reachedTool: boolean): Promise<void> {
    return settleAs(ctx, call, token, settleAction(call.effect, error, reachedTool))
  }

  /** Releases the record or records its outcome as unknown; never throws. */
  async function settleAs(ctx: ToolContext, call: Guarded, token: string, action: SettleAction): Promise<void> {
    try {
      const settling = action === 'release' ? store.release(call.storeKey, token) : store.markUnknown(call.storeKey, token, ttlMs)
      const owned = isPromise(settling) ? await settling : settling
      if (!owned) ctx.emit('idempotency.token_lost', { key: call.key, op: action })
      else if (action === 'release') ctx.emit('idempotency.released', { key: call.key })
      else {
        ctx.emit('idempotency.outcome_unknown', { key: call.key })
        ctx.log.warn({ key: call.key }, 'a write failed after it may have reached the world; identical calls will be refused')
      }
    } catch (err) {
      storeFailed(ctx, call, action === 'release' ? 'release' : 'markUnknown', err)
    }
  }

  /** Stores a completed call's result; never throws, so the call's success is what the caller sees. A promise only for a store that answers later. */
  function complete(ctx: ToolContext, call: Guarded, token: string, json: string | undefined): Promise<void> | undefined {
    try {
      if (completeText !== undefined) {
        const clock = ctx.clock
        const at = clock.now === storeClock ? clock.now() : undefined
        stored(ctx, call, completeText(call.storeKey, token, json, ttlMs, at), at)
        return undefined
      }
      const completing = store.complete(call.storeKey, token, json === undefined ? {} : { value: JSON.parse(json) as Json }, ttlMs)
      if (isPromise(completing))
        return Promise.resolve(completing).then(
          (owned) => stored(ctx, call, owned),
          (err: unknown) => storeFailed(ctx, call, 'complete', err),
        )
      stored(ctx, call, completing)
    } catch (err) {
      storeFailed(ctx, call, 'complete', err)
    }
    return undefined
  }

  function stored(ctx: ToolContext, call: Guarded, owned: boolean, at?: number): void {
    emitFresh(ctx, owned ? 'idempotency.stored' : 'idempotency.token_lost', { key: call.key, op: 'complete' }, at)
  }

  /**
   * The call as this layer guards it (setting `ctx.idempotencyKey`), or `undefined` when the schema
   * refused its arguments: the dispatcher answers invalid_arguments and nothing runs, so no record is
   * needed. A bad scope or key throws its refusal.
   */
  function identify(ctx: ToolContext, tool: AnyTool): Guarded | undefined {
    let args: unknown
    try {
      // The call's one parse, shared with the tool (defaults filled in, so `{ amount: 5 }` and
      // `{ amount: 5, currency: 'usd' }` are one call when `usd` is the default).
      args = ctx.args
    } catch {
      return undefined
    }
    const scope = scopeOf(ctx, tool.name)
    // The call's one identity (tool + canonical parsed arguments), the one stuck-loop counts by too.
    const argsHash = ctx.fingerprint
    const key = keyOf(ctx, tool.name, scope, argsHash, args)
    ctx.idempotencyKey = key
    const reconcilable = tool.reconcile !== undefined
    return { tool: tool.name, effect: tool.effect, key, storeKey: storeKeyOf(scopeInStore(ctx, scope), key), argsHash, reconcilable }
  }

  /** Waits for identical calls in flight in this process: replays the first one's success, shares its refusal, or leads once none is left. */
  async function waitThenLead(ctx: ToolContext, next: Next, call: Guarded): Promise<void> {
    for (let running = calls.get(call.storeKey); running !== undefined; running = calls.get(call.storeKey)) {
      ctx.emit('idempotency.waiting', { key: call.key, where: 'in_process' })
      const outcome = await waitFor(running, ctx.signal)
      if (outcome?.argsHash !== call.argsHash) continue
      if (!outcome.ok) throw refuse(ctx, call, outcome.refusal)
      replay(ctx, call, outcome.json === undefined ? undefined : JSON.parse(outcome.json), 'in_process')
      return
    }
    await lead(ctx, next, call)
  }

  /**
   * Leads the call, the one owner of its key in this process until it settles: claims the key, runs
   * the inner layers, settles the record, and tells waiting duplicates what to see. With a
   * synchronous store it has no frame of its own to suspend: the claim runs now, the settling in
   * reactions on `next()`'s promise.
   */
  function lead(ctx: ToolContext, next: Next, call: Guarded): Promise<void> {
    const flight = inFlight()
    calls.set(call.storeKey, flight)
    let claiming: Claimed | Promise<Claimed>
    try {
      claiming = claimKey(ctx, call)
    } catch (err) {
      return Promise.reject(notClaimed(call, flight, err))
    }
    if (!isPromise(claiming)) return proceed(ctx, next, call, flight, claiming)
    return claiming.then(
      (claim) => proceed(ctx, next, call, flight, claim),
      (err: unknown) => {
        throw notClaimed(call, flight, err)
      },
    )
  }

  /** Ends the flight of a call whose claim threw: a refusal is what waiting duplicates share. */
  function notClaimed(call: Guarded, flight: InFlight, err: unknown): unknown {
    if (ToolError.is(err)) flight.outcome = { argsHash: call.argsHash, ok: false, refusal: err }
    land(call, flight)
    return err
  }

  /** The call no longer leads its key: duplicates waiting in this process see its outcome. */
  function land(call: Guarded, flight: InFlight): void {
    calls.delete(call.storeKey)
    landed(flight)
  }

  /** Replays a stored result, or runs the inner layers under the claimed token and settles the record. */
  function proceed(ctx: ToolContext, next: Next, call: Guarded, flight: InFlight, claim: Claimed): Promise<void> {
    if (claim instanceof Reclaim) return takeOver(ctx, next, call, flight, claim.reason)
    if (typeof claim !== 'string') {
      try {
        const { value } = claim
        replay(ctx, call, value, 'store')
        if (awaited(flight))
          flight.outcome = { argsHash: call.argsHash, ok: true, json: value === undefined ? undefined : JSON.stringify(value) }
      } catch (err) {
        return Promise.reject(err)
      } finally {
        land(call, flight)
      }
      return Promise.resolve()
    }
    // The terminal counts every real invocation of the tool: if none happened, nothing reached the world.
    const executionsBefore = ctx.executions
    return callNext(next).then(
      () => succeeded(ctx, call, flight, claim),
      (err: unknown) => {
        const reachedTool = ctx.executions !== executionsBefore
        if (call.reconcilable && !LoopError.is(err) && !ctx.signal.aborted && settleAction(call.effect, err, reachedTool) === 'unknown')
          return reconcileFailure(ctx, call, flight, claim, err)
        // The call's own error is what propagates, whatever settling it did.
        const rethrow = () => {
          land(call, flight)
          throw err
        }
        return settleFailure(ctx, call, claim, err, reachedTool).then(rethrow, rethrow)
      },
    )
  }

  /** Stores a success (a promise only for a store that answers later) and lands the flight. */
  function succeeded(ctx: ToolContext, call: Guarded, flight: InFlight, token: string): Promise<void> | undefined {
    let json: string | undefined
    let completing: Promise<void> | undefined
    try {
      const value = ctx.result?.value
      // Serialised once: the store's record and what waiting duplicates replay come from this one text.
      json = value === undefined ? undefined : canonicalJson(value)
      completing = complete(ctx, call, token, json)
    } catch (err) {
      land(call, flight)
      throw err
    }
    if (completing === undefined) return landSucceeded(call, flight, json)
    return completing.then(
      () => landSucceeded(call, flight, json),
      (err: unknown) => {
        // complete() reports a store's failure and resolves; should that ever throw, the flight still lands.
        land(call, flight)
        throw err
      },
    )
  }

  /** Lands a call that succeeded: waiting duplicates replay its result from the one serialised text. */
  function landSucceeded(call: Guarded, flight: InFlight, json: string | undefined): undefined {
    if (awaited(flight)) flight.outcome = { argsHash: call.argsHash, ok: true, json }
    land(call, flight)
    return undefined
  }

  /** Asks the tool's reconciler; a stop while asking (cancellation, a hard error) leaves the record unknown, then propagates. */
  async function askOrSettleUnknown(ctx: ToolContext, call: Guarded, flight: InFlight, token: string): Promise<Reconciled> {
    try {
      return await askReconciler(ctx, ctx.tool as AnyTool, call.key, limits)
    } catch (stop) {
      await settleAs(ctx, call, token, 'unknown')
      land(call, flight)
      throw stop
    }
  }

  /**
   * A write failed and left its outcome unknown, and its tool can reconcile: asks while the call
   * still owns the record. Applied: the call succeeds with that result, stored. Not applied: the
   * record is released and the error says repeating is safe. Unknown: recorded as such, the error
   * saying what was tried.
   */
  async function reconcileFailure(ctx: ToolContext, call: Guarded, flight: InFlight, token: string, err: unknown): Promise<void> {
    const reconciled = await askOrSettleUnknown(ctx, call, flight, token)
    if (reconciled.outcome === 'applied') {
      ctx.result = { value: JSON.parse(reconciled.json) }
      return succeeded(ctx, call, flight, token)
    }
    await settleAs(ctx, call, token, reconciled.outcome === 'not_applied' ? 'release' : 'unknown')
    land(call, flight)
    throw reconciled.outcome === 'not_applied' ? notTakenEffect(err) : stillUnknown(err, reconciled)
  }

  /**
   * An identical earlier call's outcome is unknown and the tool can reconcile: takes the record over
   * (the store's `reclaim`), then asks. Applied: replays that result, now stored. Not applied: runs the
   * call under the record. Unknown: records it as such again and refuses, saying what was tried.
   */
  async function takeOver(ctx: ToolContext, next: Next, call: Guarded, flight: InFlight, reason: Reclaim['reason']): Promise<void> {
    let token: unknown
    try {
      token = await store.reclaim?.(call.storeKey, call.argsHash, leaseMs, ttlMs)
    } catch (err) {
      storeFailed(ctx, call, 'reclaim', err)
      throw notClaimed(call, flight, refuse(ctx, call, outcomeUnknown(call.tool, reason, call.key)))
    }
    if (typeof token !== 'string' || token === '') {
      // Another caller took the record over or settled it first: ask the store once more (and wait, if it is in flight).
      let claim: Claimed
      try {
        claim = await claimKey(ctx, call)
      } catch (err) {
        throw notClaimed(call, flight, err)
      }
      if (claim instanceof Reclaim) throw notClaimed(call, flight, refuse(ctx, call, outcomeUnknown(call.tool, claim.reason, call.key)))
      return proceed(ctx, next, call, flight, claim)
    }
    ctx.emit('idempotency.reclaimed', { key: call.key, reason })
    const reconciled = await askOrSettleUnknown(ctx, call, flight, token)
    if (reconciled.outcome === 'applied') {
      ctx.result = { value: JSON.parse(reconciled.json), replayed: true }
      return succeeded(ctx, call, flight, token)
    }
    if (reconciled.outcome === 'not_applied') return proceed(ctx, next, call, flight, token)
    await settleAs(ctx, call, token, 'unknown')
    throw notClaimed(call, flight, refuse(ctx, call, outcomeUnknown(call.tool, reason, call.key, reconciled)))
  }

  // Trusted (docs/decisions/270-compose-fast-path.md): a call runs next() at most once, after its claim, and settles after it;
  // a replayed or refused call never calls it. An unguarded call (a read) is handed straight to next().
  return trustedMiddleware(function idempotency(ctx: ToolContext, next: Next): Promise<void> {
    const tool = ctx.tool
    if (tool === undefined || !guardedEffects.has(tool.effect)) return callNext(next)
    let call: Guarded | undefined
    try {
      call = identify(ctx, tool)
    } catch (err) {
      return Promise.reject(err)
    }
    if (call === undefined) return callNext(next)
    return calls.get(call.storeKey) === undefined ? lead(ctx, next, call) : waitThenLead(ctx, next, call)
  })
}
