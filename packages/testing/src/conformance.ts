// The conformance suite lives behind its own entry point because it imports vitest: the rest of the
// kit (scripted model, manual clock, chaos tools) is used at run time by the CLI, without vitest.
export { type ConformanceCheck, type ConformanceOptions, middlewareConformance } from './middleware-conformance.js'
