import { createStack, defineTool, type Stack } from '@shallot/core'
import { z } from 'zod'
import { idempotency } from './index.js'

/** A refunds API that takes no idempotency key; its list can be filtered by payment and creation time. */
export interface RefundsApi {
  createRefund(body: { payment: string; amount: number }, options: { signal: AbortSignal }): Promise<Refund>
  listRefunds(query: { payment: string; createdSince: number }, options: { signal: AbortSignal }): Promise<Refund[]>
}
export interface Refund {
  id: string
  payment: string
  amount: number
  /** When the API created it (ms since 1970, the API's clock). */
  created: number
}

/** Our clock and the API's disagree a little: search from a minute before the refund was sent. */
const CLOCK_SKEW_MS = 60_000

export function refundStack(api: RefundsApi): Stack {
  const refundPayment = defineTool({
    name: 'refund_payment',
    description: 'Refund part or all of a payment',
    input: z.object({ payment: z.string(), amount: z.number().int().positive() }),
    effect: 'write',
    execute: ({ payment, amount }, { signal }) => api.createRefund({ payment, amount }, { signal }),
    // No key reaches the API, so search by what the refund carried: this payment, this amount, since it was sent.
    reconcile: async ({ payment, amount }, { sentAt, signal }) => {
      if (sentAt === undefined) return { status: 'unknown', hint: 'list the refunds of this payment before refunding it again' }
      const refunds = await api.listRefunds({ payment, createdSince: sentAt - CLOCK_SKEW_MS }, { signal })
      const found = refunds.find((refund) => refund.amount === amount)
      return found === undefined ? { status: 'not_applied' } : { status: 'applied', result: found }
    },
  })
  return createStack({ tools: [refundPayment], middleware: [idempotency()] })
}
