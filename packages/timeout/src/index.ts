export { timeoutDefinition } from './definition.js'
export { type TimeoutLayer, type TimeoutOptions, timeout } from './timeout.js'
export { DEFAULT_MODEL_TIMEOUT_MS } from './timeout-model.js'
