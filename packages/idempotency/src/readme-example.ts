import { defineTool } from '@shallot/core'
import { z } from 'zod'

/** The calls of a payments API (Stripe-style: a repeat with the same Idempotency-Key answers the first charge). */
export interface PaymentsApi {
  createCharge(body: { card: string; amount: number }, options: { idempotencyKey: string; signal: AbortSignal }): Promise<Charge>
  /** Payouts honour no key, but each carries a reference the API can be searched by. */
  createPayout(body: { account: string; amount: number; reference: string }, options: { signal: AbortSignal }): Promise<Payout>
  findPayout(reference: string, options: { signal: AbortSignal }): Promise<Payout | undefined>
}
export interface Charge {
  id: string
  amount: number
}
export interface Payout {
  id: string
  reference: string
}

export function paymentTools(api: PaymentsApi) {
  const chargeCard = defineTool({
    name: 'charge_card',
    description: 'Charge a card',
    input: z.object({ card: z.string(), amount: z.number().int().positive() }),
    // The key reaches the API on every attempt, so repeating is harmless: retry may repeat it.
    effect: 'idempotent',
    execute: ({ card, amount }, { idempotencyKey, signal }) => {
      if (idempotencyKey === undefined) throw new Error('charge_card needs idempotency() in its stack')
      return api.createCharge({ card, amount }, { idempotencyKey, signal })
    },
  })

  // A read tool of the same service: the model may call it, and the payout's reconcile does.
  const findPayout = defineTool({
    name: 'find_payout',
    description: 'Find a payout by its reference',
    input: z.object({ reference: z.string() }),
    effect: 'read',
    execute: ({ reference }, { signal }) => api.findPayout(reference, { signal }),
  })

  const sendPayout = defineTool({
    name: 'send_payout',
    description: 'Send money to an account',
    input: z.object({ account: z.string(), amount: z.number().int().positive() }),
    // No key upstream: never repeated blindly. After an unknown outcome, idempotency() asks reconcile.
    effect: 'write',
    execute: ({ account, amount }, { idempotencyKey, signal }) =>
      api.createPayout({ account, amount, reference: idempotencyKey ?? '' }, { signal }),
    reconcile: async (_args, context) => {
      const found = await findPayout.execute({ reference: context.idempotencyKey ?? '' }, context)
      return found === undefined ? { status: 'not_applied' } : { status: 'applied', result: found }
    },
  })
  return { chargeCard, findPayout, sendPayout }
}
