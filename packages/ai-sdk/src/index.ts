export { type AiSdkModelOptions, aiSdkModel } from './ai-sdk-model.js'
export { type ClassifyModelErrorOptions, classifyModelError } from './classify-model-error.js'
export {
  type ShallotModelOptions,
  shallotModel,
  shallotModelMiddleware,
  shallotModelOptionsSchema,
} from './shallot-model.js'
export {
  type ShallotTool,
  type ShallotToolSet,
  type ShallotTools,
  type ShallotToolsOptions,
  shallotTools,
  shallotToolsOptionsSchema,
} from './shallot-tools.js'
export { isSoftFailure, type SoftFailure, softFailure } from './soft-failure.js'
export {
  idempotencyKeyOf,
  inputSchemaOf,
  type ShallotToolExecutionOptions,
  type ToShallotToolOptions,
  type ToShallotToolsOptions,
  toShallotTool,
  toShallotTools,
} from './to-shallot-tool.js'
export type { ToolApprovalRequestPart, ToolApprovalResponsePart } from './tool-approval.js'
