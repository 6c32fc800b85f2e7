import { AsyncLocalStorage } from 'node:async_hooks'

/** What a LangChain tool may learn of the shallot call it runs for, beside what LangChain hands it. */
export interface ShallotCall {
  /** One key per logical call, the same on every retry (set by `idempotency()`): forward it to an API that honours keys. */
  readonly idempotencyKey: string | undefined
  /** 1-based, bumped by `retry()`. */
  readonly attempt: number
  /** The attempt's signal: a layer's deadline, a sibling's hard stop, the run's cancel (LangChain hands its tools none of these). */
  readonly signal: AbortSignal
}

export const shallotCalls = new AsyncLocalStorage<ShallotCall>()

/**
 * The shallot call the running LangChain tool serves: its idempotency key, attempt and signal. `undefined` outside a
 * shallot stack. A tool written with `tool()` reads it in its function, as LangGraph's `getConfig()` is read.
 *
 * @example
 * const refund = tool(async ({ payment }) => {
 *   const call = getShallotCall()
 *   return payments.refund(payment, { idempotencyKey: call?.idempotencyKey, signal: call?.signal })
 * }, { name: 'refund', description: 'Refund a payment', schema: z.object({ payment: z.string() }) })
 */
export function getShallotCall(): ShallotCall | undefined {
  return shallotCalls.getStore()
}
