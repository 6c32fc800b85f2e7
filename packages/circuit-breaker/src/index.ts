export type { BreakerState, Circuit } from './breaker-machine.js'
export type { BreakerStore } from './breaker-store.js'
export { mapTimes, READ_MARGIN_MS, type TimeMap, timeMap } from './breaker-times.js'
export { type BreakerStateChange, type CircuitBreakerOptions, circuitBreaker } from './circuit-breaker.js'
export {
  type CircuitBreakerModelOptions,
  circuitBreakerModel,
  circuitBreakerModelOptionsSchema,
  type ModelCircuitNote,
  modelBreakerKey,
  modelCircuitOpenError,
} from './circuit-breaker-model.js'
export { type ConsecutiveOptions, consecutive } from './consecutive.js'
export { circuitBreakerDefinition } from './definition.js'
export type { FailurePolicy } from './failure-policy.js'
export { indictsTool } from './indicts-tool.js'
export { type MemoryBreakerStore, type MemoryBreakerStoreOptions, memoryBreakerStore } from './memory-breaker-store.js'
export { type SamplingOptions, sampling } from './sampling.js'
export { type UpdateRound, updateRounds } from './update-rounds.js'
