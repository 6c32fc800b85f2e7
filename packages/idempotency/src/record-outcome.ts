import type { Json, ToolContext } from '@shallot/core'
import { type Guarded, isPromise, type Layer, storeFailed } from './guarded-call.js'
import type { SettleAction } from './settle-action.js'

/** Releases the record or records its outcome as unknown; never throws. */
export async function settleAs(layer: Layer, ctx: ToolContext, call: Guarded, token: string, action: SettleAction): Promise<void> {
  const { store } = layer
  try {
    const settling = action === 'release' ? store.release(call.storeKey, token) : store.markUnknown(call.storeKey, token, layer.ttlMs)
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
export function complete(
  layer: Layer,
  ctx: ToolContext,
  call: Guarded,
  token: string,
  json: string | undefined,
): Promise<void> | undefined {
  const { completeText, ttlMs } = layer
  try {
    if (completeText !== undefined) {
      stored(ctx, call, completeText(call.storeKey, token, json, ttlMs))
      return undefined
    }
    const completing = layer.store.complete(call.storeKey, token, json === undefined ? {} : { value: JSON.parse(json) as Json }, ttlMs)
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

function stored(ctx: ToolContext, call: Guarded, owned: boolean): void {
  ctx.emit(owned ? 'idempotency.stored' : 'idempotency.token_lost', { key: call.key, op: 'complete' })
}
