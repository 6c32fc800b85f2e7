import type { RunOutcome } from '@shallot/agent'
import { ToolError } from '@shallot/core'
import type { ResolvedModel } from './model-spec.js'

type Stopped = Extract<RunOutcome, { status: 'stopped' }>

const NO_CHECKPOINT = 'then run it again with --checkpoints run.db (this run kept no checkpoint)'

/**
 * Why the model never answered, when no turn completed and every attempt failed to connect: the
 * system's code (`ECONNREFUSED`, `ENOTFOUND`) or `no connection`. A wrong base URL or no server is
 * the caller's to fix, not the run's.
 */
export function neverConnected(outcome: RunOutcome): string | undefined {
  if (outcome.status !== 'stopped' || outcome.turns > 0) return undefined
  const { kind, cause, message } = outcome.error
  if (kind !== 'model_failed' || !ToolError.is(cause) || cause.code !== 'network_error') return undefined
  return /\bE[A-Z]{3,}\b/.exec(message)?.[0] ?? 'no connection'
}

/** What to fix before resuming: the provider's refusal of the key or the quota (as `aiSdkModel` classifies it), or no answer at all. */
function refusal(outcome: Stopped): 'credentials' | 'quota' | 'unreachable' | undefined {
  const { kind, details } = outcome.error
  if (neverConnected(outcome) !== undefined) return 'unreachable'
  if (kind !== 'user_input_required' || typeof details.providerMessage !== 'string') return undefined
  return details.reason === 'credentials' || details.reason === 'quota' ? details.reason : undefined
}

/** The provider's advice with its name, its URL and the variable to fix. */
function providerAdvice(outcome: Stopped, refused: 'credentials' | 'quota' | 'unreachable', model: ResolvedModel): string {
  if (refused === 'unreachable') return `Check ${model.urlVar}: nothing answered at ${model.endpoint} (${neverConnected(outcome)})`
  if (refused === 'quota') return `Add credit or raise the quota of the ${model.provider} account behind ${model.keyVar}`
  const where = model.baseURL === undefined ? `the ${model.provider} API` : `${model.provider} at ${model.baseURL}`
  return `Check ${model.keyVar}: ${where} refused it (the key, or its access to the model)`
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/** Core's next step with the library's resume call swapped for the command line's. */
function commandLineSteps(outcome: Stopped, resume: string | undefined): string {
  const { nextSteps, resume: call } = outcome.report
  if (call === undefined) return nextSteps
  if (resume !== undefined) return nextSteps.replace(call, resume)
  return nextSteps.replace(new RegExp(`(?:then )?resume(?: it)? with ${escapeRegExp(call)}`), NO_CHECKPOINT)
}

/**
 * The outcome as `shallot run` tells it: the report's Next line gives the `shallot resume …` command
 * (or, without `--checkpoints`, how to make a run resumable) instead of the library's
 * `agent.resume(…)`, and a provider's refusal of the key or the quota names the provider, its URL and
 * the variable to fix, as does a model nobody answered at (`model` undefined: a scripted model, as the
 * demo's, has no provider to name). A completed outcome is returned as it is.
 *
 * @example
 * printOutcome(io.out, withCliNextSteps(outcome, 'shallot resume run-1 --checkpoints run.db --model openai:m', resolved))
 */
export function withCliNextSteps(outcome: RunOutcome, resume: string | undefined, model: ResolvedModel | undefined): RunOutcome {
  if (outcome.status !== 'stopped') return outcome
  const refused = model === undefined ? undefined : refusal(outcome)
  const nextSteps =
    refused === undefined || model === undefined
      ? commandLineSteps(outcome, resume)
      : `${providerAdvice(outcome, refused, model)}, ${resume === undefined ? NO_CHECKPOINT : `then resume it with ${resume}`}.`
  const lines = outcome.report.text.split('\n')
  const at = lines.lastIndexOf(`Next: ${outcome.report.nextSteps}`)
  if (at >= 0) lines[at] = `Next: ${nextSteps}`
  return { ...outcome, report: { ...outcome.report, nextSteps, text: lines.join('\n') } }
}
