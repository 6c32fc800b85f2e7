export { loopErrorOf } from './loop-error-of.js'
export {
  type ShallotFunctionToolSet,
  type ShallotFunctionToolSpec,
  type ShallotFunctionToolsOptions,
  shallotFunctionTools,
  shallotFunctionToolsOptionsSchema,
} from './shallot-function-tools.js'
