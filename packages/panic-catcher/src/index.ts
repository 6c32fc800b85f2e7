export { describePanic, MAX_CAUSES, type PanicDescription, UNKNOWN_PAYLOAD } from './describe-panic.js'
export { DEFAULT_PANIC_HINT, type PanicCatcherOptions, panicCatcher, panicCatcherOptionsSchema } from './panic-catcher.js'
