export { timeoutDefinition } from './definition.js'
export { type TimeoutOptions, timeout } from './timeout.js'
export { DEFAULT_MODEL_TIMEOUT_MS, timeoutModel } from './timeout-model.js'
