import { shallotModel } from '@shallot/ai-sdk'
import { generateText, type LanguageModel } from 'ai'
import type { Case } from './measure.js'

export const AI_SDK_BARE = 'AI SDK model call (doGenerate), a scripted in-process model'
export const AI_SDK_SHALLOT = '… through shallotModel(): defaultModelMiddleware() (breaker, retry, classifier, timeout)'
export const AI_SDK_TEXT_BARE = 'generateText over the scripted model'
export const AI_SDK_TEXT_SHALLOT = 'generateText over shallotModel(scripted model)'

const usage = {
  inputTokens: { total: 12, noCache: 12, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 3, text: 3, reasoning: undefined },
}
const answer = {
  content: [{ type: 'text' as const, text: 'done' }],
  finishReason: { unified: 'stop' as const, raw: 'stop' },
  usage,
  warnings: [],
}

/** A language model of the v3 specification answering in-process: what a call costs without any network. */
function scriptedModel() {
  return {
    specificationVersion: 'v3' as const,
    provider: 'bench',
    modelId: 'bench-model',
    supportedUrls: {},
    doGenerate: async () => answer,
    doStream: async () => {
      throw new Error('the bench model does not stream')
    },
  }
}

const params = { prompt: [{ role: 'user' as const, content: [{ type: 'text' as const, text: 'look it up' }] }] }

/**
 * 9 (continued): what shallot's model layers cost an AI SDK model call (issue 47's bar: ≤ 2 µs), against the bare
 * model, both asked with the same call options: (shallot − bare) per call. The generateText rows put that beside
 * what the SDK's own call costs.
 */
export function aiSdkModelCases(): Case[] {
  const bare = scriptedModel()
  const wrapped = shallotModel(bare as unknown as LanguageModel) as unknown as ReturnType<typeof scriptedModel>
  const check = (result: { content: unknown[] }) => {
    if (result.content.length !== 1) throw new Error('the model call did not answer')
  }
  const text = (model: LanguageModel, name: string) => () =>
    generateText({ model, prompt: 'look it up' }).then((r) => {
      if (r.text !== 'done') throw new Error(`${name}: the call did not answer`)
    })
  return [
    { name: AI_SDK_BARE, fn: () => bare.doGenerate().then(check) },
    { name: AI_SDK_SHALLOT, fn: () => (wrapped.doGenerate as (p: typeof params) => Promise<typeof answer>)(params).then(check) },
    { name: AI_SDK_TEXT_BARE, fn: text(bare as unknown as LanguageModel, AI_SDK_TEXT_BARE) },
    { name: AI_SDK_TEXT_SHALLOT, fn: text(wrapped as unknown as LanguageModel, AI_SDK_TEXT_SHALLOT) },
  ]
}
