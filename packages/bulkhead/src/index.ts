export { type BulkheadOptions, bulkhead, bulkheadOptionsSchema } from './bulkhead.js'
export { bulkheadDefinition, bulkheadDefinition as definition, bulkheadFileOptionsSchema } from './definition.js'
export { type OverloadFacts, type OverloadReason, overloadedError } from './overloaded-error.js'
