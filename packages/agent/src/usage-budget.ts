import { LoopError, type ModelUsage } from '@shallot/core'
import type { ModelPrice } from './model-link.js'

/**
 * Tokens and dollars a run has spent on model calls; checkpointed with the run, so resume goes on counting.
 *
 * @example
 * const { usage } = await agent.run({ input })
 * console.log(`${usage.inputTokens + usage.outputTokens} tokens, $${usage.costUsd.toFixed(4)}`)
 */
export interface RunUsage {
  readonly inputTokens: number
  readonly outputTokens: number
  readonly costUsd: number
}

export const NO_USAGE: RunUsage = Object.freeze({ inputTokens: 0, outputTokens: 0, costUsd: 0 })

const isAmount = (n: unknown): n is number => typeof n === 'number' && Number.isFinite(n) && n >= 0

/** The usage a checkpoint holds; one written before budgets existed holds none. */
export function usageOfSnapshot(value: unknown, runId: string): RunUsage {
  if (value === undefined) return NO_USAGE
  const u = value as Partial<Record<keyof RunUsage, unknown>>
  if (typeof value !== 'object' || value === null || !isAmount(u.inputTokens) || !isAmount(u.outputTokens) || !isAmount(u.costUsd))
    throw new TypeError(
      `agent.resume(): the checkpoint of run "${runId}" has a corrupt usage record (expected finite token and cost counts)`,
    )
  return { inputTokens: u.inputTokens, outputTokens: u.outputTokens, costUsd: u.costUsd }
}

/** The usage after one model call; a count the provider did not report adds nothing. */
export function addUsage(total: RunUsage, usage: ModelUsage | undefined, price: ModelPrice | undefined): RunUsage {
  const input = isAmount(usage?.inputTokens) ? usage.inputTokens : 0
  const output = isAmount(usage?.outputTokens) ? usage.outputTokens : 0
  if (input === 0 && output === 0) return total
  const cost = price === undefined ? 0 : (input * price.inputPerMTokUsd + output * price.outputPerMTokUsd) / 1_000_000
  return { inputTokens: total.inputTokens + input, outputTokens: total.outputTokens + output, costUsd: total.costUsd + cost }
}

export interface UsageLimits {
  readonly maxTokens?: number | undefined
  readonly maxCostUsd?: number | undefined
}

const usd = (n: number) => `$${n.toFixed(n < 1 ? 4 : 2)}`

/**
 * The budget error when `usage` is past a limit (`spent`: the call that crossed it is in), or has
 * reached it (`before`: no call can be made within it), else undefined.
 */
export function usageExhausted(usage: RunUsage, limits: UsageLimits, when: 'spent' | 'before'): LoopError | undefined {
  const tokens = usage.inputTokens + usage.outputTokens
  const over = (used: number, max: number) => (when === 'spent' ? used > max : used >= max)
  const counts = { inputTokens: usage.inputTokens, outputTokens: usage.outputTokens, costUsd: usage.costUsd }
  if (limits.maxTokens !== undefined && over(tokens, limits.maxTokens)) {
    return new LoopError('budget_exhausted', `token budget exhausted: ${tokens} tokens used, limits.maxTokens is ${limits.maxTokens}`, {
      details: { maxTokens: limits.maxTokens, usedTokens: tokens, ...counts },
    })
  }
  if (limits.maxCostUsd !== undefined && over(usage.costUsd, limits.maxCostUsd)) {
    return new LoopError(
      'budget_exhausted',
      `cost budget exhausted: ${usd(usage.costUsd)} spent, limits.maxCostUsd is ${usd(limits.maxCostUsd)}`,
      {
        details: { maxCostUsd: limits.maxCostUsd, usedTokens: tokens, ...counts },
      },
    )
  }
  return undefined
}
