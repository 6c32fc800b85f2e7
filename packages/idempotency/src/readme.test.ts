import { readFileSync } from 'node:fs'
import { createRun, createStack, ToolError } from '@shallot/core'
import { manualClock } from '@shallot/testing'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { idempotency, memoryIdempotencyStore } from './index.js'
import { type Charge, type PaymentsApi, type Payout, paymentTools } from './readme-example.js'
import { type Refund, type RefundsApi, refundStack } from './readme-search-example.js'

const read = (file: string) => readFileSync(new URL(file, import.meta.url), 'utf8')

/** A payments API whose answers get lost after the work is done, as the test says. */
function flakyApi() {
  const charges = new Map<string, Charge>()
  const payouts: Payout[] = []
  const keys: string[] = []
  const lose = { charge: 1, payout: 1 }
  const api: PaymentsApi = {
    async createCharge({ amount }, { idempotencyKey }) {
      keys.push(idempotencyKey)
      const charge = charges.get(idempotencyKey) ?? { id: `ch_${charges.size + 1}`, amount }
      charges.set(idempotencyKey, charge)
      if (lose.charge-- > 0) throw new ToolError('upstream_error', 'connection reset', { category: 'transient' })
      return charge
    },
    async createPayout({ reference }) {
      payouts.push({ id: `po_${payouts.length + 1}`, reference })
      if (lose.payout-- > 0) throw new ToolError('timeout', 'send_payout timed out')
      return payouts.at(-1) as Payout
    },
    async findPayout(reference) {
      return payouts.find((p) => p.reference === reference)
    },
  }
  return { api, charges, payouts, keys }
}

describe('README: upstream keys and reconciliation', () => {
  it('shows the type-checked example verbatim', () => {
    expect(read('../README.md')).toContain(read('./readme-example.ts'))
  })

  it('charge_card forwards one key on every try, so the API answers the repeat with the first charge', async () => {
    const { api, charges, keys } = flakyApi()
    const { chargeCard } = paymentTools(api)
    const stack = createStack({ tools: [chargeCard], middleware: [idempotency()] })
    const run = createRun({ id: 'run-1' })
    const call = { id: 'c1', name: 'charge_card', args: { card: 'tok_visa', amount: 500 } }
    expect((await stack.dispatch(call, { run })).error?.code).toBe('upstream_error')
    const again = await stack.dispatch({ ...call, id: 'c2' }, { run })
    expect(again).toMatchObject({ ok: true, replayed: false, value: { id: 'ch_1', amount: 500 } })
    expect(charges.size).toBe(1)
    expect(keys).toHaveLength(2)
    expect(new Set(keys).size).toBe(1)
  })

  it('send_payout times out after the payout went out; its reconcile finds it and the call succeeds, paid once', async () => {
    const { api, payouts } = flakyApi()
    const { sendPayout, findPayout } = paymentTools(api)
    const clock = manualClock()
    const stack = createStack({
      clock,
      tools: [sendPayout, findPayout],
      middleware: [idempotency({ store: memoryIdempotencyStore({ now: clock.now }) })],
    })
    const call = { id: 'c1', name: 'send_payout', args: { account: 'acct_1', amount: 900 } }
    const result = await stack.dispatch(call)
    expect(result).toMatchObject({ ok: true, value: { id: 'po_1' } })
    expect(result.trace.find((e) => e.type === 'idempotency.reconciled')).toMatchObject({ outcome: 'applied' })
    expect(await stack.dispatch({ ...call, id: 'c2' })).toMatchObject({ ok: true, replayed: true, value: { id: 'po_1' } })
    expect(payouts).toHaveLength(1)
  })
})

describe('README: a reconciler for a keyless API searches by what the write carried, since it was sent', () => {
  /** A refunds API that answers late: `lose` refunds are made but their answer is lost (a timeout), `drop` are never made. */
  function refundsApi(faults: Array<'lose' | 'drop' | undefined>) {
    const refunds: Refund[] = []
    const api: RefundsApi = {
      async createRefund({ payment, amount }) {
        const fault = faults.shift()
        if (fault === 'drop') throw new ToolError('timeout', 'refund_payment timed out')
        refunds.push({ id: `re_${refunds.length + 1}`, payment, amount, created: Date.now() })
        if (fault === 'lose') throw new ToolError('timeout', 'refund_payment timed out')
        return refunds.at(-1) as Refund
      },
      async listRefunds({ payment, createdSince }) {
        return refunds.filter((r) => r.payment === payment && r.created >= createdSince)
      },
    }
    return { api, refunds }
  }
  const refund = (id: string) => ({ id, name: 'refund_payment', args: { payment: 'pay_42', amount: 1200 } })

  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['Date'], now: Date.UTC(2026, 4, 1, 12) })
  })
  afterEach(() => {
    vi.useRealTimers()
  })

  it('shows the type-checked example verbatim (importing the published name)', () => {
    const example = read('./readme-search-example.ts').replace("from './index.js'", "from '@shallot/idempotency'")
    expect(read('../README.md')).toContain(example)
  })

  it('the refund went out and its answer was lost: the search finds it, the call succeeds, refunded once', async () => {
    const { api, refunds } = refundsApi(['lose'])
    // An older refund of the same payment and amount, from the day before: outside the window, not taken for this one.
    refunds.push({ id: 're_old', payment: 'pay_42', amount: 1200, created: Date.now() - 86_400_000 })
    const stack = refundStack(api)
    const result = await stack.dispatch(refund('c1'))
    expect(result).toMatchObject({ ok: true, value: { id: 're_2', payment: 'pay_42', amount: 1200 } })
    expect(refunds.map((r) => r.id)).toEqual(['re_old', 're_2'])
  })

  it('the refund never went out: the search finds nothing, the error says a repeat is safe, and the repeat refunds once', async () => {
    const { api, refunds } = refundsApi(['drop'])
    const stack = refundStack(api)
    const first = await stack.dispatch(refund('c1'))
    expect(first).toMatchObject({ ok: false, error: { code: 'timeout' } })
    expect(first.error?.safeToRepeat).toBe(true)
    expect(await stack.dispatch(refund('c2'))).toMatchObject({ ok: true, value: { id: 're_1' } })
    expect(refunds).toHaveLength(1)
  })
})
