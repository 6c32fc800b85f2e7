import { createAgent, memoryCheckpoints } from '@shallot/agent'
import { createRun, createStack, defineTool, LoopError, ToolError } from '@shallot/core'
import { manualClock, scriptedModel } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { idempotency, memoryIdempotencyStore } from './index.js'

/** A write tool that counts real executions and fails as the test says. */
function writeTool(effect: 'write' | 'idempotent', behave: (n: number, signal: AbortSignal) => unknown | Promise<unknown>) {
  let runs = 0
  const tool = defineTool({
    name: 'charge_card',
    description: 'Charge a card',
    input: z.object({ card: z.string(), amount: z.number() }),
    effect,
    execute: async (_args, { signal }) => {
      runs++
      return behave(runs, signal)
    },
  })
  return { tool, runs: () => runs }
}

const charge = { id: 'c', name: 'charge_card', args: { card: 'c1', amount: 5 } }

describe('idempotency: failures', () => {
  it('does not run a write that timed out again: the model’s next identical call is refused as outcome_unknown', async () => {
    const { tool, runs } = writeTool('write', () => {
      throw new ToolError('timeout', 'charge_card timed out after 5000 ms')
    })
    const stack = createStack({ tools: [tool], middleware: [idempotency()] })
    const first = await stack.dispatch(charge)
    expect(first.error).toMatchObject({ code: 'timeout', retryable: true, safeToRepeat: false })
    expect(first.trace.map((e) => e.type)).toEqual(['idempotency.outcome_unknown'])
    const again = await stack.dispatch(charge)
    expect(again.error).toMatchObject({ code: 'outcome_unknown', category: 'recoverable', retryable: false, safeToRepeat: false })
    expect(again.error?.hint).toContain('find out whether it took effect with a tool that looks it up')
    expect(again.content).toContain('may or may not have taken effect')
    expect(again.content).not.toMatch(/try again|before repeating/i)
    expect(runs()).toBe(1)
  })

  it('releases the key after a safeToRepeat failure, so the next identical call runs', async () => {
    const { tool, runs } = writeTool('write', (n) => {
      if (n === 1) throw new ToolError('rate_limited', '429', { safeToRepeat: true })
      return 'charged'
    })
    const stack = createStack({ tools: [tool], middleware: [idempotency()] })
    expect((await stack.dispatch(charge)).trace.map((e) => e.type)).toEqual(['idempotency.released'])
    expect(await stack.dispatch(charge)).toMatchObject({ ok: true, value: 'charged', replayed: false })
    expect(runs()).toBe(2)
  })

  it('releases the key after any failure of an idempotent tool', async () => {
    const { tool, runs } = writeTool('idempotent', (n) => {
      if (n === 1) throw new ToolError('upstream_error', '502')
      return 'put'
    })
    const stack = createStack({ tools: [tool], middleware: [idempotency()] })
    await stack.dispatch(charge)
    expect(await stack.dispatch(charge)).toMatchObject({ ok: true, value: 'put' })
    expect(runs()).toBe(2)
  })

  it('records the outcome as unknown when a foreign error escapes a write, and lets the error through', async () => {
    const { tool, runs } = writeTool('write', () => {
      throw new Error('socket hang up')
    })
    const stack = createStack({ tools: [tool], middleware: [idempotency()] })
    await expect(stack.dispatch(charge)).rejects.toSatisfy((e: unknown) => LoopError.is(e) && e.kind === 'tool_crashed')
    expect((await stack.dispatch(charge)).error?.code).toBe('outcome_unknown')
    expect(runs()).toBe(1)
  })

  it('rethrows a cancellation that hit a write untouched and records its outcome as unknown', async () => {
    const controller = new AbortController()
    const cancelled = new LoopError('cancelled', 'the user pressed Ctrl-C')
    const { tool, runs } = writeTool('write', () => {
      controller.abort(cancelled) // the world saw the charge; the run is cancelled before the answer comes back
      return 'charged'
    })
    const stack = createStack({ tools: [tool], middleware: [idempotency()] })
    await expect(stack.dispatch(charge, { signal: controller.signal })).rejects.toBe(cancelled)
    expect((await stack.dispatch(charge)).error?.code).toBe('outcome_unknown')
    expect(runs()).toBe(1)
  })

  it('releases the key when the run stops before any attempt reached the tool (budget exhausted)', async () => {
    const { tool, runs } = writeTool('write', () => 'charged')
    const stack = createStack({ tools: [tool], middleware: [idempotency()] })
    const spent = createRun({ id: 'run-1', maxSteps: 1, stepsUsed: 1 })
    await expect(stack.dispatch(charge, { run: spent })).rejects.toSatisfy((e: unknown) => LoopError.is(e) && e.kind === 'budget_exhausted')
    expect(runs()).toBe(0)
    expect(await stack.dispatch(charge, { run: createRun({ id: 'run-1' }) })).toMatchObject({ ok: true, replayed: false })
    expect(runs()).toBe(1)
  })

  it('keeps an unknown outcome for the full TTL, not just the lease', async () => {
    const { tool, runs } = writeTool('write', () => {
      throw new ToolError('upstream_error', '500 after the charge was sent')
    })
    const clock = manualClock()
    const store = memoryIdempotencyStore({ now: clock.now })
    const stack = createStack({ clock, tools: [tool], middleware: [idempotency({ store, leaseMs: 10, ttlMs: 1000 })] })
    await stack.dispatch(charge)
    await clock.advance(999)
    expect((await stack.dispatch(charge)).error?.code).toBe('outcome_unknown')
    await clock.advance(1)
    expect((await stack.dispatch(charge)).error?.code).toBe('upstream_error')
    expect(runs()).toBe(2)
  })
})

describe('idempotency: resumed runs', () => {
  it('a run stopped after the charge completed, then resumed, replays the charge instead of charging again', async () => {
    let charges = 0
    const chargeCard = defineTool({
      name: 'charge_card',
      description: 'Charge a card',
      input: z.object({ card: z.string(), amount: z.number() }),
      execute: () => ({ chargeId: `ch_${++charges}` }),
    })
    const explode = defineTool({
      name: 'send_receipt',
      description: 'Send the receipt',
      input: z.object({}),
      execute: () => {
        throw new ToolError('permission_denied', 'mail relay refused') // fatal: the run stops, the turn is dropped
      },
    })
    const store = memoryIdempotencyStore()
    const checkpoints = memoryCheckpoints()
    const turn = {
      toolCalls: [
        { name: 'charge_card', args: { card: 'c1', amount: 5 } },
        { name: 'send_receipt', args: {} },
      ],
    }
    const first = createAgent({
      model: scriptedModel([turn]),
      tools: [chargeCard, explode],
      middleware: [idempotency({ store })],
      checkpoints,
    })
    const stopped = await first.run({ input: 'charge and mail', runId: 'run-42' })
    expect(stopped.status).toBe('stopped')
    expect(charges).toBe(1)

    const resumedModel = scriptedModel([
      { toolCalls: [{ name: 'charge_card', args: { amount: 5, card: 'c1' } }] },
      ({ lastResults }) => ({ text: lastResults[0]?.content ?? '' }),
    ])
    const second = createAgent({ model: resumedModel, tools: [chargeCard, explode], middleware: [idempotency({ store })], checkpoints })
    const resumed = await second.resume('run-42')
    expect(resumed).toMatchObject({ status: 'completed', output: '{"chargeId":"ch_1"}' })
    expect(charges).toBe(1)
  })

  it('the quickstart scene: charge_card times out, the model asks again, is told to check, finds the charge: charged once', async () => {
    const charges: string[] = []
    const chargeCard = defineTool({
      name: 'charge_card',
      description: 'Charge a card',
      input: z.object({ card: z.string(), amount: z.number() }),
      execute: ({ card }) => {
        charges.push(card) // the charge goes through…
        throw new ToolError('timeout', 'charge_card did not answer within 5 s') // …but the answer never arrives
      },
    })
    const findCharge = defineTool({
      name: 'find_charge',
      description: 'Look up charges of a card',
      input: z.object({ card: z.string() }),
      effect: 'read',
      execute: ({ card }) => charges.filter((c) => c === card).map((c, i) => ({ card: c, chargeId: `ch_${i + 1}` })),
    })
    const ask = { name: 'charge_card', args: { card: 'tok_visa', amount: 500 } }
    const model = scriptedModel([
      { toolCalls: [ask] },
      ({ lastResults }) => (lastResults[0]?.ok === false ? { toolCalls: [ask] } : { text: 'charged' }),
      ({ lastResults }) =>
        JSON.parse(lastResults[0]?.content ?? '{}').error === 'outcome_unknown'
          ? { toolCalls: [{ name: 'find_charge', args: { card: 'tok_visa' } }] }
          : { toolCalls: [ask] },
      ({ lastResults }) => ({ text: `found ${lastResults[0]?.content}` }),
    ])
    const outcome = await createAgent({ model, tools: [chargeCard, findCharge], middleware: [idempotency()] }).run({ input: 'charge $5' })
    expect(outcome).toMatchObject({ status: 'completed', output: 'found [{"card":"tok_visa","chargeId":"ch_1"}]' })
    expect(charges).toEqual(['tok_visa'])
  })
})
