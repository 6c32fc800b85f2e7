export { timeoutDefinition } from './definition.js'
export { type TimeoutOptions, timeout } from './timeout.js'
