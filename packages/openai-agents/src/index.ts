export type { FunctionToolSource, ShallotFunctionToolSpec } from './function-tool-specs.js'
export { loopErrorOf } from './loop-error-of.js'
export {
  type ShallotFunctionToolSet,
  type ShallotFunctionToolsOptions,
  shallotFunctionTools,
  shallotFunctionToolsOptionsSchema,
} from './shallot-function-tools.js'
export { type ShallotModelOptions, shallotModel, shallotModelOptionsSchema, spareModel } from './shallot-model.js'
export { type ShallotModelProviderOptions, shallotModelProvider, shallotModelProviderOptionsSchema } from './shallot-model-provider.js'
