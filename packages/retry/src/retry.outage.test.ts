import { type AgentEvent, createAgent } from '@shallot/agent'
import { LoopError, type ModelAdapter, type ModelMiddleware, type ModelResponse, OptionsError, ToolError } from '@shallot/core'
import { type ManualClock, manualClock, seededRandom } from '@shallot/testing'
import { timeout } from '@shallot/timeout'
import { describe, expect, it } from 'vitest'
import { constant, type RetryOptions, retry } from './index.js'

/** What the provider answers a request sent at `at` (ms on the clock), given how many came before. */
type Provider = (at: number, index: number) => ModelResponse | Error | 'hang'

function provider(clock: ManualClock, answer: Provider) {
  const sent: number[] = []
  const adapter: ModelAdapter = {
    generate() {
      const at = clock.now()
      const said = answer(at, sent.length)
      sent.push(at)
      if (said === 'hang') return new Promise<never>(() => {})
      return said instanceof Error ? Promise.reject(said) : Promise.resolve(said)
    },
  }
  return { adapter, sent }
}

const done: ModelResponse = { text: 'ok', toolCalls: [] }
const limited = (retryAfterMs: number) =>
  new ToolError('rate_limited', 'the model provider is rate limiting (429)', { category: 'transient', safeToRepeat: true, retryAfterMs })
const unavailable = () => new ToolError('overloaded', 'the model provider is overloaded (503)', { category: 'transient' })

/** The default model stack's figures with a two-minute outage budget. */
const OUTAGE: RetryOptions = { maxAttempts: 3, baseMs: 250, capMs: 16_000, outageBudgetMs: 120_000 }

/** What `fallback({ models })` tells the layers inside it while a spare would be asked next (by the context's shape). */
const spareWaits: ModelMiddleware = (ctx, next) => {
  ;(ctx as { spareModel?: boolean }).spareModel = true
  return next()
}

interface Extra {
  signal?: AbortSignal
  maxSteps?: number
  outside?: ModelMiddleware[]
}

async function runOn(clock: ManualClock, adapter: ModelAdapter, options: RetryOptions, extra: Extra = {}) {
  const events: AgentEvent[] = []
  const agent = createAgent({
    model: adapter,
    tools: [],
    modelMiddleware: [...(extra.outside ?? []), retry(options), timeout({ ms: 60_000 })],
    clock,
    random: seededRandom(3),
    onEvent: (event) => events.push(event),
    ...(extra.maxSteps === undefined ? {} : { limits: { maxSteps: extra.maxSteps } }),
  })
  let settled = false
  const run = agent.run(extra.signal === undefined ? { input: 'go' } : { input: 'go', signal: extra.signal })
  run.then(
    () => (settled = true),
    () => (settled = true),
  )
  for (let i = 0; i < 5000 && !settled; i++) await clock.runAll()
  const outcome = await run
  return { outcome, events, why: outcome.status === 'stopped' ? outcome.error.kind : undefined }
}

describe('retry, model side: an outage budget bounds the repeats by time, not by count', () => {
  it('attempts alone give up on three 429s with Retry-After 1 s, the pushback every provider sends at a minute boundary', async () => {
    const clock = manualClock()
    const { adapter, sent } = provider(clock, (_at, i) => (i < 3 ? limited(1000) : done))
    const { why } = await runOn(clock, adapter, { maxAttempts: 3, baseMs: 250, capMs: 4000 })
    expect(why).toBe('model_failed')
    expect(sent).toHaveLength(3)
  })

  it('rides them out with a budget: the fourth request answers, each sent no sooner than the Retry-After asked', async () => {
    const clock = manualClock()
    const { adapter, sent } = provider(clock, (_at, i) => (i < 3 ? limited(1000) : done))
    const { outcome } = await runOn(clock, adapter, OUTAGE)
    expect(outcome.status).toBe('completed')
    expect(sent).toHaveLength(4)
    for (let i = 1; i < sent.length; i++) expect((sent[i] as number) - (sent[i - 1] as number)).toBeGreaterThanOrEqual(1000)
  })

  it('rides out 30 s of 503s with a growing backoff: a dozen requests or fewer, the answer within one capped wait of the end', async () => {
    const clock = manualClock()
    const { adapter, sent } = provider(clock, (at) => (at < 30_000 ? unavailable() : done))
    const { outcome, events } = await runOn(clock, adapter, OUTAGE)
    expect(outcome.status).toBe('completed')
    expect(sent.length).toBeLessThanOrEqual(12)
    expect(sent.at(-1)).toBeGreaterThanOrEqual(30_000)
    expect(sent.at(-1)).toBeLessThan(30_000 + 16_000)
    const retried = events.filter((e) => e.type === 'model.retry')
    expect(retried.at(-1)).toMatchObject({ outageBudgetMs: 120_000 })
    expect(retried.every((e) => !('maxAttempts' in e))).toBe(true)
  })

  it('gives a dead provider up within the budget: no wait starts that would end past it', async () => {
    const clock = manualClock()
    const { adapter, sent } = provider(clock, () => unavailable())
    const { why } = await runOn(clock, adapter, OUTAGE)
    expect(why).toBe('model_failed')
    expect(sent.at(-1)).toBeLessThanOrEqual(120_000)
    expect(clock.now()).toBeLessThanOrEqual(120_000)
    expect(sent.length).toBeGreaterThan(3)
  })

  it('gives up at once on a Retry-After longer than what is left of the budget', async () => {
    const clock = manualClock()
    const { adapter, sent } = provider(clock, (at) => (at < 100_000 ? limited(10_000) : limited(30_000)))
    const { why } = await runOn(clock, adapter, OUTAGE)
    expect(why).toBe('model_failed')
    expect(sent.at(-1)).toBeGreaterThanOrEqual(100_000)
    expect(clock.now()).toBeLessThan(120_000)
  })

  it('stops at once on what will not heal: a failure that is not transient, and every LoopError', async () => {
    for (const failure of [
      Object.assign(new Error('bad request'), { status: 400 }),
      new LoopError('user_input_required', 'the model provider refused the credentials (401)'),
    ]) {
      const clock = manualClock()
      const { adapter, sent } = provider(clock, () => failure)
      const { outcome } = await runOn(clock, adapter, OUTAGE)
      expect(outcome.status).toBe('stopped')
      expect(sent).toHaveLength(1)
    }
  })

  it('keeps perCode as a bound for its code: two model hangs, then the call is given up', async () => {
    const clock = manualClock()
    const { adapter, sent } = provider(clock, () => 'hang')
    const { why } = await runOn(clock, adapter, { ...OUTAGE, perCode: { timeout: { maxAttempts: 2 } } })
    expect(why).toBe('model_failed')
    expect(sent).toHaveLength(2)
  })

  it('ends an outage wait the moment the run is cancelled', async () => {
    const clock = manualClock()
    const controller = new AbortController()
    const { adapter, sent } = provider(clock, () => limited(50_000))
    void clock.sleep(10_000).then(() => controller.abort(new Error('user hit stop')))
    const { why } = await runOn(clock, adapter, OUTAGE, { signal: controller.signal })
    expect(why).toBe('cancelled')
    expect(sent).toHaveLength(1)
    expect(clock.now()).toBe(10_000)
  })

  it('stops a policy that waits nothing at 1000 requests, when neither the budget nor the steps nor a retry budget would', async () => {
    const clock = manualClock()
    const { adapter, sent } = provider(clock, () => unavailable())
    const spin: RetryOptions = { backoff: constant(0), outageBudgetMs: 24 * 3600 * 1000, retryBudget: false }
    const { why } = await runOn(clock, adapter, spin, { maxSteps: 100_000 })
    expect(why).toBe('model_failed')
    expect(sent).toHaveLength(1000)
  })

  it('does not ride out an outage while a spare model waits outside: attempts bound the call, and the spare is asked next', async () => {
    const clock = manualClock()
    const { adapter, sent } = provider(clock, () => unavailable())
    const { why } = await runOn(clock, adapter, OUTAGE, { outside: [spareWaits] })
    expect(why).toBe('model_failed')
    expect(sent).toHaveLength(3)
    expect(clock.now()).toBeLessThan(2_000)
  })

  it('reads a budget of 0 as none: attempts alone bound the call', async () => {
    const clock = manualClock()
    const { adapter, sent } = provider(clock, (_at, i) => (i < 3 ? limited(1000) : done))
    const { why } = await runOn(clock, adapter, { ...OUTAGE, outageBudgetMs: 0 })
    expect(why).toBe('model_failed')
    expect(sent).toHaveLength(3)
  })

  it.each([Number.NaN, -1, Number.POSITIVE_INFINITY, 24 * 3600 * 1000 + 1, '120000'])('refuses outageBudgetMs %s, naming it', (bad) => {
    expect(() => retry({ outageBudgetMs: bad as number })).toThrow(OptionsError)
    expect(() => retry({ outageBudgetMs: bad as number })).toThrow(/outageBudgetMs/)
  })
})
