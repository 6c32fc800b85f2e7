export { formatSeconds } from './format-seconds.js'
export { MAX_TIMEOUT_MS, type TimeoutOptions, timeout, timeoutOptionsSchema } from './timeout.js'
export { timeoutError } from './timeout-error.js'
