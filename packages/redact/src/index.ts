export { blockedByPolicy } from './blocked.js'
export { redactDefinition, redactDefinition as definition, redactFileOptionsSchema } from './definition.js'
export { BUILTIN_DETECTORS, type BuiltinDetector } from './detectors.js'
export { type RedactOptions, type RedactStrategy, redact, redactOptionsSchema } from './redact.js'
