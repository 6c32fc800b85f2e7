import type { RunOutcome } from '@shallot/agent'
import type { ResolvedModel } from './model-spec.js'

type Stopped = Extract<RunOutcome, { status: 'stopped' }>

const NO_CHECKPOINT = 'then run it again with --checkpoints run.db (this run kept no checkpoint)'

/** What the provider refused, when the stop is its refusal of the key or the quota (as `aiSdkModel` classifies it). */
function refusal(outcome: Stopped): 'credentials' | 'quota' | undefined {
  const { kind, details } = outcome.error
  if (kind !== 'user_input_required' || typeof details.providerMessage !== 'string') return undefined
  return details.reason === 'credentials' || details.reason === 'quota' ? details.reason : undefined
}

/** The provider's advice with its name, its URL and the variable to fix. */
function providerAdvice(refused: 'credentials' | 'quota', model: ResolvedModel): string {
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
 * the variable to fix. A completed outcome is returned as it is.
 *
 * @example
 * printOutcome(io.out, withCliNextSteps(outcome, 'shallot resume run-1 --checkpoints run.db --model openai:m', resolved))
 */
export function withCliNextSteps(outcome: RunOutcome, resume: string | undefined, model: ResolvedModel): RunOutcome {
  if (outcome.status !== 'stopped') return outcome
  const refused = refusal(outcome)
  const nextSteps =
    refused === undefined
      ? commandLineSteps(outcome, resume)
      : `${providerAdvice(refused, model)}, ${resume === undefined ? NO_CHECKPOINT : `then resume it with ${resume}`}.`
  const lines = outcome.report.text.split('\n')
  const at = lines.lastIndexOf(`Next: ${outcome.report.nextSteps}`)
  if (at >= 0) lines[at] = `Next: ${nextSteps}`
  return { ...outcome, report: { ...outcome.report, nextSteps, text: lines.join('\n') } }
}
