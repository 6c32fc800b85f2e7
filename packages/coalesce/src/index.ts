export { type CoalesceOptions, type CoalesceScopeFunction, coalesce, coalesceOptionsSchema } from './coalesce.js'
export { coalesceDefinition, coalesceDefinition as definition, coalesceFileOptionsSchema } from './definition.js'
