import { createAgent } from '@shallot/agent'
import { type ModelAdapter, type ModelMiddleware, ToolError } from '@shallot/core'
import { type ManualClock, manualClock, seededRandom } from '@shallot/testing'
import { defaultModelMiddleware } from 'shallot'

/** How a model call's retry is bounded: by attempts (3, the model stack's former default), or by the two-minute outage budget. */
export type OutageRetry = 'attempts' | 'time'

export interface OutageOptions {
  /** How long the provider is down, in virtual ms. */
  outageMs: number
  /** Model calls simulated; each arrives at a random moment of the outage. */
  runs: number
  retry: OutageRetry
  seed: number
}

export interface OutageResult {
  outageMs: number
  retry: OutageRetry
  /** Share of calls that got their answer. */
  successRate: number
  /** Requests per call, the failed ones included. */
  requestsPerCall: number
  /** 95th percentile of a call's time from its first request to its end, in virtual ms. */
  p95Ms: number
}

/** The two retries `shallot sim outage` compares, as `defaultModelMiddleware()` builds them. */
const STACKS: Record<OutageRetry, () => ModelMiddleware[]> = {
  // What the default model stack was before it rode outages out: 3 attempts, full jitter from 250 ms to 4 s.
  attempts: () => defaultModelMiddleware({ retry: { backoff: 'full-jitter', capMs: 4000, outageBudgetMs: 0 } }),
  time: () => defaultModelMiddleware(),
}

/** A provider down until `upAt` on `clock`: a 503 (no Retry-After) before, an answer after; counts the requests. */
function providerDownUntil(clock: ManualClock, upAt: number) {
  const seen = { requests: 0 }
  const model: ModelAdapter = {
    generate: async () => {
      seen.requests++
      if (clock.now() < upAt) throw new ToolError('overloaded', 'the model provider is overloaded (503)', { category: 'transient' })
      return { text: 'answered', toolCalls: [] }
    },
  }
  return { model, seen }
}

/** One model call that arrives `leftMs` before the provider is back: whether it got the answer, after how many requests and how long. */
async function oneCall(retry: OutageRetry, leftMs: number, seed: number) {
  const clock = manualClock()
  const { model, seen } = providerDownUntil(clock, leftMs)
  const agent = createAgent({ model, tools: [], modelMiddleware: STACKS[retry](), clock, random: seededRandom(seed) })
  let settled = false
  const run = agent.run({ input: 'go' }).finally(() => {
    settled = true
  })
  while (!settled) await clock.runAll()
  const outcome = await run
  return { ok: outcome.status === 'completed', requests: seen.requests, ms: clock.now() }
}

/**
 * Model calls against a provider that is down for `outageMs` (503s without Retry-After), each arriving at a
 * random moment of the outage, through the default model stack with attempt-bounded or time-bounded retry.
 *
 * @example
 * const result = await outage({ outageMs: 30_000, runs: 1000, retry: 'time', seed: 1 })
 * result.successRate // 1: two minutes of budget ride out a 30 s outage
 */
export async function outage(options: OutageOptions): Promise<OutageResult> {
  const arrivals = seededRandom(options.seed)
  let succeeded = 0
  let requests = 0
  const durations: number[] = []
  for (let i = 0; i < options.runs; i++) {
    const call = await oneCall(options.retry, arrivals() * options.outageMs, options.seed * 7_919 + i)
    if (call.ok) succeeded++
    requests += call.requests
    durations.push(call.ms)
  }
  durations.sort((a, b) => a - b)
  const runs = Math.max(1, options.runs)
  return {
    outageMs: options.outageMs,
    retry: options.retry,
    successRate: succeeded / runs,
    requestsPerCall: requests / runs,
    p95Ms: durations[Math.min(durations.length - 1, Math.floor(0.95 * durations.length))] ?? 0,
  }
}

/** The outage lengths `shallot sim outage` simulates, in seconds. */
export const OUTAGE_SECONDS: readonly number[] = [5, 10, 30, 60, 90, 120, 180]
