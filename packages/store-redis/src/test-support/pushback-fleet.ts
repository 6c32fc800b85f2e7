// The fleet scenario of the shared pushback, for a store on a real server (Redis here, PostgreSQL in
// store-postgres): three workers of tenant A and one of tenant B, each an agent of its own with its own
// store on its own connection, asking the same provider (the fake provider, over HTTP, through the AI SDK).
// The provider is out for tenant A's account for the first 30 s: it answers 429 with the rest of the outage
// as Retry-After. Worker A1 learns it; A2 and A3 must send nothing to that model until it passes, and then
// not all at once; B1 (another account, another key) is not held. One manual clock for the fleet.
import { createOpenAI } from '@ai-sdk/openai'
import { createAgent, type RunOutcome } from '@shallot/agent'
import { aiSdkModel } from '@shallot/ai-sdk'
import type { ModelAdapter } from '@shallot/core'
import { modelRateKey, type PushbackStore, rateLimit } from '@shallot/rate-limit'
import { retry } from '@shallot/retry'
import { fakeProvider, manualClock, seededRandom } from '@shallot/testing'

/** The outage of tenant A's account: 30 s from the first request. */
export const OUTAGE_MS = 30_000
/** The store's wall clock at virtual time 0. */
export const FLEET_EPOCH = 1_700_000_000_000

export interface FleetReport {
  /** Each worker's outcome, by name. */
  readonly outcomes: Record<string, RunOutcome['status']>
  /** When each worker's requests reached the provider (virtual ms), by name. */
  readonly arrivals: Record<string, number[]>
  /** How many requests the provider answered 429. */
  readonly pushedBack: number
}

const WORKERS = [
  { name: 'A1', tenant: 'a' },
  { name: 'A2', tenant: 'a' },
  { name: 'A3', tenant: 'a' },
  { name: 'B1', tenant: 'b' },
] as const

/**
 * Runs the scenario with one store per worker, each from `storeOf` (a store on a connection of its own,
 * whose clock is `wallNow`), and reports what reached the provider and when.
 */
export async function pushbackFleet(storeOf: (wallNow: () => number) => Promise<PushbackStore> | PushbackStore): Promise<FleetReport> {
  const clock = manualClock()
  const provider = await fakeProvider({
    now: () => clock.now(),
    onEnd: 'repeat',
    script: [
      (request) => {
        const restMs = OUTAGE_MS - clock.now()
        if (request.headers.authorization === 'Bearer sk-tenant-a' && restMs > 0) return { fault: 'rate_limit', retryAfterMs: restMs }
        return { text: 'ok' }
      },
    ],
  })
  try {
    // Virtual time moves only while nothing is on the wire: every store call and model request is counted.
    let inFlight = 0
    const counted = <T>(work: () => T): T => {
      inFlight++
      const settled = () => void inFlight--
      const answer = work()
      Promise.resolve(answer).then(settled, settled)
      return answer
    }
    const stores = (await Promise.all(WORKERS.map(() => storeOf(() => FLEET_EPOCH + clock.now())))).map(
      (store): PushbackStore => ({
        hold: (key, ms, now) => counted(() => store.hold(key, ms, now)),
        heldFor: (key, now) => counted(() => store.heldFor(key, now)),
      }),
    )
    const models = WORKERS.map(({ tenant }) =>
      aiSdkModel(createOpenAI({ apiKey: `sk-tenant-${tenant}`, baseURL: provider.openaiBaseURL }).chat('gpt-4o')),
    )
    const runs = WORKERS.map(({ name, tenant }, i) => {
      const sdk = models[i] as ModelAdapter
      const { name: modelName, provider: providerName } = sdk as { name?: string; provider?: string }
      const model: ModelAdapter = {
        ...(modelName === undefined ? {} : { name: modelName }),
        ...(providerName === undefined ? {} : { provider: providerName }),
        generate: (request) => counted(() => sdk.generate(request)),
      }
      const agent = createAgent({
        model,
        tools: [],
        clock,
        random: seededRandom(i + 1),
        modelMiddleware: [
          retry({ maxAttempts: 3, baseMs: 100, capMs: 1000 }),
          // Inside retry: every request the provider answers passes here, so its first Retry-After is shared at once.
          rateLimit({
            limit: 1000,
            maxWaitMs: 60_000,
            storeTimeoutMs: 10_000,
            pushback: stores[i] as PushbackStore,
            key: (ctx) => ('model' in ctx ? `tenant-${tenant}:${modelRateKey(ctx.model)}` : undefined),
          }),
        ],
      })
      return { name, start: () => agent.run({ input: `worker ${name}` }) }
    })
    const [learner, ...others] = runs as [(typeof runs)[0], ...typeof runs]
    const outcomes: Array<Promise<RunOutcome>> = [learner.start()]
    // A1 has its 429, the hold is in the store, and A1 sleeps in its retry.
    const key = `tenant-a:${modelRateKey(models[0] as { name: string; provider?: string })}`
    await until(async () => (await (stores[0] as PushbackStore).heldFor(key, clock.now())) > 0 && clock.pending === 1)
    outcomes.push(...others.map((w) => w.start()))
    // A2 and A3 wait out the hold in their rate limit; B1 is not held, and completes now.
    await until(() => clock.pending === 3 && provider.requests.length === 2)
    let settled = false
    const all = Promise.all(outcomes).finally(() => (settled = true))
    for (let i = 0; i < 400 && !settled; i++) {
      await clock.advance(100)
      // The real I/O a wake starts (the store, the HTTP request) lands before virtual time moves on.
      await until(() => inFlight === 0)
    }
    const done = await all
    const arrivals: Record<string, number[]> = {}
    for (const r of provider.requests) {
      const worker = String((r.body as { messages?: Array<{ content?: unknown }> }).messages?.[0]?.content).replace('worker ', '')
      ;(arrivals[worker] ??= []).push(r.at)
    }
    return {
      outcomes: Object.fromEntries(runs.map((w, i) => [w.name, (done[i] as RunOutcome).status])),
      arrivals,
      pushedBack: provider.requests.filter((r) => r.outcome === 'faulted').length,
    }
  } finally {
    await provider.close()
  }
}

/** Polls real time until `check` holds: the I/O between two virtual instants (HTTP, the store) is real. */
async function until(check: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    if (await check()) return
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
  throw new Error(`the fleet did not reach the state the scenario waits for: ${check.toString()}`)
}
