import { getDefaultModel, type Model, type ModelProvider, OpenAIProvider } from '@openai/agents'
import { parseOptions } from '@shallot/core'
import { modelCallHost } from 'shallot'
import { z } from 'zod'
import { checkModel, hostedModel } from './shallot-model.js'
import { hostOptionsOf, modelHostShape } from './shallot-model-options.js'

const isProvider = (v: unknown) => typeof v === 'object' && v !== null && typeof (v as ModelProvider).getModel === 'function'

/** Options of {@link shallotModelProvider}. */
export const shallotModelProviderOptionsSchema = z.strictObject({
  ...modelHostShape,
  /** The provider that makes the models, by name. Default: `new OpenAIProvider()` (the SDK's default client). */
  provider: z.custom<ModelProvider>(isProvider, { message: 'must be a ModelProvider (an object with getModel(name))' }).optional(),
})

export type ShallotModelProviderOptions = z.input<typeof shallotModelProviderOptionsSchema>

/**
 * A `ModelProvider` whose models run every call through shallot's model layers ({@link shallotModel}), for agents
 * that name their model (`new Agent({ model: 'gpt-4o' })`): pass it as `new Runner({ modelProvider })`. All its
 * models share one onion, so the layers keep their state per model name (a breaker per model).
 *
 * @example
 * const runner = new Runner({ modelProvider: shallotModelProvider({ provider: new OpenAIProvider({ openAIClient }) }) })
 * const result = await runner.run(new Agent({ name: 'coder', model: 'gpt-4o', tools }), 'What does src/main.rs do?')
 */
export function shallotModelProvider(options?: ShallotModelProviderOptions): ModelProvider {
  const o = parseOptions('shallotModelProvider()', shallotModelProviderOptionsSchema, options)
  const provider = o.provider ?? new OpenAIProvider()
  const host = modelCallHost(hostOptionsOf(o))
  const models = new Map<string, Promise<Model>>()
  return {
    getModel(modelName) {
      const name = modelName === undefined || modelName === '' ? getDefaultModel() : modelName
      let model = models.get(name)
      if (model === undefined) {
        model = Promise.resolve()
          .then(() => provider.getModel(name))
          .then((made) => {
            checkModel(made, `shallotModelProvider(): the provider's getModel('${name}')`)
            return hostedModel(made, name, host, o.run)
          })
        // A provider that failed to make it is asked again next time.
        model.catch(() => models.delete(name))
        models.set(name, model)
      }
      return model
    },
  }
}
