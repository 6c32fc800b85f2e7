import { type AgentOptions, createAgent } from '@shallot/agent'
import { type ModelAdapter, type ModelRequest, type ModelResponse, OptionsError, ToolError } from '@shallot/core'
import { type ManualClock, manualClock, seededRandom } from '@shallot/testing'
import { describe, expect, it } from 'vitest'
import { DEFAULT_MODEL_ORDER, defaultModelMiddleware } from './default-model-middleware.js'
import { defaultModelMiddleware as exported } from './index.js'

type Step = ModelResponse | Error | 'hang'

function scripted(clock: ManualClock, steps: readonly Step[]) {
  const requests: number[] = []
  let i = 0
  const adapter: ModelAdapter = {
    generate(_request: ModelRequest) {
      requests.push(clock.now())
      const step = steps[Math.min(i++, steps.length - 1)] as Step
      if (step === 'hang') return new Promise<never>(() => {})
      return step instanceof Error ? Promise.reject(step) : Promise.resolve(step)
    },
  }
  return { adapter, requests }
}

const done = (text: string): ModelResponse => ({ text, toolCalls: [] })
const status = (code: number, message: string, headers?: Record<string, string>) =>
  Object.assign(new Error(message), { status: code, ...(headers === undefined ? {} : { headers }) })
const limited = (retryAfterMs: number) =>
  new ToolError('rate_limited', 'the model provider is rate limiting (429)', { category: 'transient', retryable: true, retryAfterMs })

async function runOn(clock: ManualClock, options: AgentOptions) {
  const agent = createAgent({ ...options, clock, random: seededRandom(7) })
  let settled = false
  const run = agent.run({ input: 'go' })
  run.then(
    () => (settled = true),
    () => (settled = true),
  )
  for (let i = 0; i < 200 && !settled; i++) await clock.runAll()
  return run
}

/** The script down createAgent with the default model stack listed: how the run ended, after how many requests. */
async function throughDefaults(steps: readonly Step[]) {
  const clock = manualClock()
  const { adapter, requests } = scripted(clock, steps)
  const outcome = await runOn(clock, { model: adapter, tools: [], modelMiddleware: defaultModelMiddleware() })
  const why = outcome.status === 'stopped' ? outcome.error.kind : undefined
  return { status: outcome.status, why, requests: requests.length, lastAskedAt: requests.at(-1) ?? 0 }
}

describe('defaultModelMiddleware(): the default model stack, with the figures the agent’s own model path had', () => {
  it.each<[string, Step[], { status: string; why: string | undefined; requests: number }]>([
    [
      '503, 503, then an answer',
      [status(503, 'unavailable'), status(503, 'unavailable'), done('ok')],
      { status: 'completed', why: undefined, requests: 3 },
    ],
    ['a 429 with Retry-After, then an answer', [limited(2000), done('ok')], { status: 'completed', why: undefined, requests: 2 }],
    [
      'three 429s with Retry-After 1 s (a minute-boundary pushback), then an answer',
      [limited(1000), limited(1000), limited(1000), done('ok')],
      { status: 'completed', why: undefined, requests: 4 },
    ],
    ['a 400: not repeated', [status(400, 'bad request'), done('never')], { status: 'stopped', why: 'model_failed', requests: 1 }],
    ['a hang cut by the deadline, then an answer', ['hang', done('ok')], { status: 'completed', why: undefined, requests: 2 }],
  ])('%s', async (_name, steps, expected) => {
    expect(await throughDefaults(steps)).toMatchObject(expected)
  })

  it('waits a Retry-After out before the repeat (a floor under the backoff)', async () => {
    expect((await throughDefaults([limited(2000), done('ok')])).lastAskedAt).toBeGreaterThanOrEqual(2000)
  })

  it('cuts a hang at 60 s', async () => {
    expect((await throughDefaults(['hang', done('ok')])).lastAskedAt).toBeGreaterThanOrEqual(60_000)
  })

  it('gives up at once on a Retry-After past retry’s maxRetryAfterMs, instead of waiting a clamped 60 s', async () => {
    const clock = manualClock()
    const { adapter, requests } = scripted(clock, [status(429, 'slow down', { 'retry-after': '600' }), done('never')])
    const outcome = await runOn(clock, { model: adapter, tools: [], modelMiddleware: defaultModelMiddleware() })
    expect(outcome.status).toBe('stopped')
    expect(requests).toEqual([0])
    expect(clock.now()).toBeLessThan(60_000)
  })

  it('rides out 30 s of 503s: the answer after the outage, a dozen requests or fewer', async () => {
    const clock = manualClock()
    let requests = 0
    const adapter: ModelAdapter = {
      generate: () => {
        requests++
        return clock.now() < 30_000 ? Promise.reject(status(503, 'unavailable')) : Promise.resolve(done('ok'))
      },
    }
    const outcome = await runOn(clock, { model: adapter, tools: [], modelMiddleware: defaultModelMiddleware() })
    expect(outcome.status).toBe('completed')
    expect(requests).toBeLessThanOrEqual(12)
    expect(clock.now()).toBeLessThan(30_000 + 16_000)
  })

  it('gives a provider down past two minutes up within them: model_failed, no request after 120 s', async () => {
    const { status: ended, why, requests, lastAskedAt } = await throughDefaults([status(500, 'boom')])
    expect([ended, why]).toEqual(['stopped', 'model_failed'])
    expect(requests).toBeGreaterThan(3)
    expect(lastAskedAt).toBeLessThanOrEqual(120_000)
  })

  it.each<[string, Error, string]>([
    ['refused credentials (401)', status(401, 'invalid api key'), 'user_input_required'],
    ['a forbidden model (403)', status(403, 'no access'), 'user_input_required'],
    [
      'a used-up quota, sent as a 429',
      Object.assign(status(429, 'You exceeded your current quota'), { code: 'insufficient_quota' }),
      'user_input_required',
    ],
    ['a request too long for the window', status(400, "This model's maximum context length is 8192 tokens"), 'context_exceeded'],
    [
      'a certificate that fails verification',
      new TypeError('fetch failed', { cause: Object.assign(new Error('certificate has expired'), { code: 'CERT_HAS_EXPIRED' }) }),
      'user_input_required',
    ],
  ])('stops at once on what will not heal: %s', async (_name, failure, why) => {
    expect(await throughDefaults([failure, done('never')])).toMatchObject({ status: 'stopped', why, requests: 1 })
  })

  it('gives a connection that fails 3 attempts, not the outage budget: most often a wrong URL or a server not started', async () => {
    const refused = new TypeError('fetch failed', {
      cause: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' }),
    })
    const ended = await throughDefaults([refused])
    expect(ended).toMatchObject({ status: 'stopped', why: 'model_failed', requests: 3 })
    expect(ended.lastAskedAt).toBeLessThan(2_000)
  })

  it('bounds the call by attempts when retry.maxAttempts is given without an outage budget, as asked', async () => {
    const clock = manualClock()
    const { adapter, requests } = scripted(clock, [status(503, 'unavailable')])
    const outcome = await runOn(clock, {
      model: adapter,
      tools: [],
      modelMiddleware: defaultModelMiddleware({ retry: { maxAttempts: 4 } }),
    })
    expect(outcome.status).toBe('stopped')
    expect(requests).toHaveLength(4)
  })

  it('does not open the circuit on pushback: a run that spent its budget on 429s leaves the next run free to ask', async () => {
    const clock = manualClock()
    const { adapter, requests } = scripted(clock, [limited(30_000)])
    const agent = createAgent({ model: adapter, tools: [], modelMiddleware: defaultModelMiddleware(), clock, random: seededRandom(7) })
    const first = agent.run({ input: 'go' })
    for (let i = 0; i < 200; i++) await clock.runAll()
    expect((await first).status).toBe('stopped')
    const asked = requests.length
    expect(asked).toBeGreaterThan(3)
    const second = agent.run({ input: 'go' })
    for (let i = 0; i < 200; i++) await clock.runAll()
    await second
    expect(requests.length).toBeGreaterThan(asked)
  })

  it('opens the model’s circuit after three failed calls and fails the next run fast, without a request', async () => {
    const clock = manualClock()
    const { adapter, requests } = scripted(clock, [status(503, 'unavailable')])
    const options: AgentOptions = { model: adapter, tools: [], modelMiddleware: defaultModelMiddleware({ retry: false }) }
    const agent = createAgent({ ...options, clock })
    for (let i = 0; i < 3; i++) expect((await agent.run({ input: 'go' })).status).toBe('stopped')
    expect(requests).toHaveLength(3)
    const fourth = await agent.run({ input: 'go' })
    expect(fourth.status).toBe('stopped')
    expect(requests).toHaveLength(3)
  })

  it('leaves a layer out with false, and names a misspelt layer', async () => {
    expect(defaultModelMiddleware({ retry: false, timeout: false })).toHaveLength(2)
    expect(() => defaultModelMiddleware({ timeOut: { ms: 5 } } as never)).toThrow(OptionsError)
    expect(() => defaultModelMiddleware({ retry: 3 } as never)).toThrow(/retry/)
    expect(() => defaultModelMiddleware({ retry: { maxAttempts: -1 } })).toThrow(/maxAttempts/)
    expect(() => defaultModelMiddleware({ ['__proto__']: { ms: 1 } } as never)).toThrow(OptionsError)
  })

  it('is exported by shallot in the order docs/onion.md draws', () => {
    expect(exported).toBe(defaultModelMiddleware)
    expect(DEFAULT_MODEL_ORDER).toEqual(['circuitBreaker', 'retry', 'errorClassifier', 'timeout'])
  })
})
