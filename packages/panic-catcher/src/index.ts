export { panicCatcherDefinition } from './definition.js'
export { type PanicCatcherOptions, panicCatcher } from './panic-catcher.js'
