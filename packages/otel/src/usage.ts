import { AsyncLocalStorage } from 'node:async_hooks'
import type { ModelResponse } from '@shallot/core'

/** What a model response says about itself, read defensively: adapters may leave any of it out. */
export interface ResponseFacts {
  readonly inputTokens: number | undefined
  readonly outputTokens: number | undefined
  readonly finishReason: string | undefined
  readonly toolCalls: number
}

const count = (value: unknown): number | undefined =>
  typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.floor(value) : undefined

/** Reads `usage.inputTokens` / `usage.outputTokens` and `finishReason` (DESIGN's ModelResponse contract) when present. */
export function factsOf(response: ModelResponse): ResponseFacts {
  const r = response as ModelResponse & { usage?: { inputTokens?: unknown; outputTokens?: unknown }; finishReason?: unknown }
  const usage = typeof r.usage === 'object' && r.usage !== null ? r.usage : {}
  return {
    inputTokens: count(usage.inputTokens),
    outputTokens: count(usage.outputTokens),
    finishReason: typeof r.finishReason === 'string' ? r.finishReason : undefined,
    toolCalls: Array.isArray(r.toolCalls) ? r.toolCalls.length : 0,
  }
}

/** Totals of one run, filled by the model wrapper that runs inside it. */
export class RunTally {
  inputTokens = 0
  outputTokens = 0
  modelCalls = 0
  modelAttempts = 0
  /** Failed attempts since the last answer: the next answer's attempt number is this plus one. */
  failedInARow = 0
}

/** Carries a run's tally from the agent wrapper to the model wrapper, across every await of the run. */
export function tallyScope(): AsyncLocalStorage<RunTally> {
  return new AsyncLocalStorage<RunTally>()
}
