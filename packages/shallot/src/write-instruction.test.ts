import { createRun, createStack, defineTool, ToolError, type ToolResult } from '@shallot/core'
import { manualClock, seededRandom } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { bulkhead, consecutive, defaultMiddleware } from './index.js'

const httpError = (status: number, headers: Record<string, string> = {}) =>
  Object.assign(new Error(`HTTP ${status}`), { name: 'HTTPError', status, headers })
const fetchFailed = (code: string) => new TypeError('fetch failed', { cause: Object.assign(new Error(`connect ${code}`), { code }) })

/** Every way a write can fail: each throws (or hangs) on every attempt. */
const failures: Record<string, (signal: AbortSignal) => unknown> = {
  '503 without Retry-After': () => Promise.reject(httpError(503)),
  '503 with Retry-After': () => Promise.reject(httpError(503, { 'retry-after': '2' })),
  '500': () => Promise.reject(httpError(500)),
  '502': () => Promise.reject(httpError(502)),
  '504': () => Promise.reject(httpError(504)),
  '429 with Retry-After': () => Promise.reject(httpError(429, { 'retry-after': '5' })),
  '400': () => Promise.reject(httpError(400)),
  '404': () => Promise.reject(httpError(404)),
  '409': () => Promise.reject(httpError(409)),
  'connection refused': () => Promise.reject(fetchFailed('ECONNREFUSED')),
  'DNS failure': () => Promise.reject(fetchFailed('ENOTFOUND')),
  'TLS failure before sending': () => Promise.reject(fetchFailed('CERT_HAS_EXPIRED')),
  'connection reset after sending': () => Promise.reject(fetchFailed('ECONNRESET')),
  'fetch timed out (TimeoutError)': () =>
    Promise.reject(Object.assign(new Error('The operation was aborted due to timeout'), { name: 'TimeoutError' })),
  'hangs until the timeout layer gives up': (signal) =>
    new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason))),
  "the tool's own transient ToolError with retryAfterMs": () =>
    Promise.reject(
      new ToolError('upstream_error', 'payments API busy', { category: 'transient', retryAfterMs: 4000, hint: 'try again in 4s' }),
    ),
  "the tool's own ToolError that proves nothing happened": () =>
    Promise.reject(
      new ToolError('upstream_error', 'queue full, not accepted', { category: 'transient', safeToRepeat: true, retryAfterMs: 1000 }),
    ),
  'a bug in the tool (TypeError)': () => Promise.reject(new TypeError("Cannot read properties of undefined (reading 'id')")),
  'a plain Error': () => Promise.reject(new Error('boom')),
}

interface Said {
  readonly error: string
  readonly hint?: string
  readonly retryAfterMs?: number
}

/** Whether the text the model read asks it, in so many words or with a wait, to send the identical call again. */
function invitesRepeat(said: Said): boolean {
  if (said.retryAfterMs !== undefined) return true
  const hint = said.hint ?? ''
  if (/do not repeat/i.test(hint)) return false
  return /try (it |the identical call )?again|call again|repeat/i.test(hint)
}

async function twice(name: string) {
  const clock = manualClock()
  let executions = 0
  const charge = defineTool({
    name: 'charge_card',
    description: 'charges a card',
    input: z.object({ amount: z.number() }),
    effect: 'write',
    execute: (_args, { signal }) => {
      executions++
      return (failures[name] as (signal: AbortSignal) => unknown)(signal)
    },
  })
  const stack = createStack({
    tools: [charge],
    middleware: defaultMiddleware(),
    clock,
    random: seededRandom(3),
    escalate: { fatal: false, user: false },
  })
  const run = createRun({ id: 'run-1' })
  const dispatch = async (id: string): Promise<ToolResult> => {
    const pending = stack.dispatch({ id, name: 'charge_card', args: { amount: 500 } }, { run })
    await clock.runAll()
    return pending
  }
  const first = await dispatch('c1')
  const ranFirst = executions
  const second = await dispatch('c2')
  return { first, second, ranAgain: executions > ranFirst }
}

describe('one coherent instruction: what a write reads never invites a repeat the stack refuses', () => {
  it.each(Object.keys(failures))('%s', async (name) => {
    const { first, second, ranAgain } = await twice(name)
    expect(first.ok).toBe(false)
    const said = JSON.parse(first.content) as Said
    const refused = second.error?.code === 'outcome_unknown'
    if (invitesRepeat(said)) {
      // Invited: the identical call is admitted and runs.
      expect(refused, `${first.content} invites a repeat, then: ${second.content}`).toBe(false)
      expect(ranAgain).toBe(true)
    }
    if (refused) {
      expect(invitesRepeat(said), `${first.content} invites a repeat the stack refused`).toBe(false)
      expect(ranAgain).toBe(false)
    }
    // A write that may have landed says so, and names what can work instead.
    if (first.error?.safeToRepeat === false && first.error.category === 'transient') {
      expect(said.hint).toMatch(/may have taken effect, so do not repeat this call/)
      expect(said.retryAfterMs).toBeUndefined()
      expect(refused).toBe(true)
    }
  })

  it('keeps the invitation for a read: a 503 of a lookup still says when to come back', async () => {
    const clock = manualClock()
    const lookup = defineTool({
      name: 'find_order',
      description: 'looks an order up',
      input: z.object({ id: z.string() }),
      effect: 'read',
      execute: () => Promise.reject(httpError(503)),
    })
    const stack = createStack({ tools: [lookup], middleware: defaultMiddleware(), clock, random: seededRandom(3) })
    const pending = stack.dispatch({ id: 'c1', name: 'find_order', args: { id: 'o-1' } })
    await clock.runAll()
    const said = JSON.parse((await pending).content) as Said
    expect(said.hint ?? '').not.toMatch(/do not repeat/)
  })
})

describe("shallot's own refusals of a write say nothing reached the tool, and the stack agrees", () => {
  const slowCharge = (clock: ReturnType<typeof manualClock>, counter: { runs: number }) =>
    defineTool({
      name: 'charge_card',
      description: 'charges a card',
      input: z.object({ amount: z.number() }),
      effect: 'write',
      execute: async (_args, { signal }) => {
        counter.runs++
        await clock.sleep(1000, signal)
        return 'charged'
      },
    })

  it('a full bulkhead: overloaded, safe to repeat, and the identical call runs once the slot is free', async () => {
    const clock = manualClock()
    const counter = { runs: 0 }
    const stack = createStack({
      tools: [slowCharge(clock, counter)],
      middleware: [...defaultMiddleware(), bulkhead({ maxConcurrent: 1, maxQueue: 0 })],
      clock,
      random: seededRandom(3),
    })
    const run = createRun({ id: 'run-1' })
    const first = stack.dispatch({ id: 'c1', name: 'charge_card', args: { amount: 1 } }, { run })
    const refused = await stack.dispatch({ id: 'c2', name: 'charge_card', args: { amount: 2 } }, { run })
    expect(refused.error).toMatchObject({ code: 'overloaded', safeToRepeat: true })
    await clock.runAll()
    expect((await first).ok).toBe(true)
    const again = stack.dispatch({ id: 'c3', name: 'charge_card', args: { amount: 2 } }, { run })
    await clock.runAll()
    expect(await again).toMatchObject({ ok: true, value: 'charged' })
    expect(counter.runs).toBe(2)
  })

  it('an open circuit: circuit_open with retryAfterMs, and the identical write runs after the cooldown', async () => {
    const clock = manualClock()
    let fail = true
    const flaky = defineTool({
      name: 'charge_card',
      description: 'charges a card',
      input: z.object({ amount: z.number() }),
      effect: 'write',
      execute: () => {
        if (fail) throw Object.assign(new Error('HTTP 429'), { status: 429, headers: {} })
        return 'charged'
      },
    })
    const stack = createStack({
      tools: [flaky],
      middleware: defaultMiddleware({ circuitBreaker: { policy: consecutive({ threshold: 1 }), cooldownMs: 30_000 } }),
      clock,
      random: seededRandom(3),
    })
    const run = createRun({ id: 'run-1' })
    const dispatch = async (id: string, amount: number) => {
      const pending = stack.dispatch({ id, name: 'charge_card', args: { amount } }, { run })
      await clock.runAll()
      return pending
    }
    expect((await dispatch('c1', 1)).error?.code).toBe('rate_limited')
    const refused = await dispatch('c2', 2)
    const said = JSON.parse(refused.content) as Said
    expect(refused.error).toMatchObject({ code: 'circuit_open', safeToRepeat: true })
    expect(invitesRepeat(said)).toBe(true)
    fail = false
    await clock.advance(said.retryAfterMs ?? 0)
    expect(await dispatch('c3', 2)).toMatchObject({ ok: true, value: 'charged' })
  })
})
