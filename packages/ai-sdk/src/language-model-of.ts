import type { ModelAdapter } from '@shallot/core'
import type { LanguageModel } from 'ai'

// The AI SDK model behind each adapter `aiSdkModel()` made: a fallback layer's spare is an adapter, and a model
// wrapped by `shallotModel()` asks the spare's own language model with the call's prompt and settings.

const languageModels = new WeakMap<ModelAdapter, LanguageModel>()

export function rememberLanguageModel(adapter: ModelAdapter, model: LanguageModel): void {
  languageModels.set(adapter, model)
}

/** The AI SDK model an adapter of `aiSdkModel()` asks, or undefined for any other adapter. */
export function languageModelOf(adapter: ModelAdapter): LanguageModel | undefined {
  return languageModels.get(adapter)
}
