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
    ['a 500 on every attempt', [status(500, 'boom')], { status: 'stopped', why: 'model_failed', requests: 3 }],
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
