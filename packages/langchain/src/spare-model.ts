import type { ModelAdapter } from '@shallot/core'

/** The LangChain chat model behind each adapter `spareModel` made. */
const chatModels = new WeakMap<ModelAdapter, unknown>()

/** A LangChain chat model, as LangChain's handler takes one. */
function isChatModel(value: unknown): boolean {
  const model = value as { invoke?: unknown; withConfig?: unknown } | null
  return typeof model?.invoke === 'function' && typeof model.withConfig === 'function'
}

/** How events and logs name a LangChain chat model: its `model` id (`claude-sonnet-4-5`), else its type. */
export function modelNameOf(model: unknown): string {
  const id = typeof model === 'object' && model !== null ? (model as { model?: unknown }).model : undefined
  return typeof id === 'string' && id !== '' ? id : 'langchain'
}

/**
 * A LangChain chat model as a spare of `fallback({ models })` in `shallotMiddleware({ modelMiddleware })`, named for
 * events, reports and its own circuit breaker by `name`, else its model id. Name it apart from the agent's model when
 * both have the same id (one model at two providers): a spare named as the agent's model is taken for it and skipped.
 *
 * @example
 * shallotMiddleware({ modelMiddleware: [fallback({ models: [spareModel(new ChatOpenAI({ model: 'gpt-4o-mini' }))] }), ...defaultModelMiddleware()] })
 */
export function spareModel(model: unknown, name?: string): ModelAdapter {
  if (!isChatModel(model)) throw new TypeError('spareModel(): pass a LangChain chat model (new ChatAnthropic(...), new ChatOpenAI(...))')
  if (name !== undefined && (typeof name !== 'string' || name.trim() === ''))
    throw new TypeError("spareModel(): name must be a non-empty string, e.g. 'gpt-4o-mini'")
  const label = name ?? modelNameOf(model)
  const adapter: ModelAdapter = {
    name: label,
    generate: () =>
      Promise.reject(
        new TypeError(`spareModel('${label}') is asked through LangChain's handler: list it in shallotMiddleware's modelMiddleware`),
      ),
  }
  chatModels.set(adapter, model)
  return adapter
}

/** The chat model a spare made by `spareModel` stands for; `undefined` for any other adapter. */
export function chatModelOfSpare(adapter: ModelAdapter): unknown {
  return chatModels.get(adapter)
}
