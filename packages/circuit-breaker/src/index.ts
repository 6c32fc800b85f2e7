export {
  type Admission,
  type BreakerMachine,
  type BreakerMachineConfig,
  type BreakerState,
  breakerMachine,
  type Circuit,
  type Outcome,
  type Settlement,
  type Ticket,
  type Transition,
} from './breaker-machine.js'
export type { BreakerStore } from './breaker-store.js'
export { mapTimes, READ_MARGIN_MS, type TimeMap, timeMap } from './breaker-times.js'
export {
  type BreakerStateChange,
  type CircuitBreakerOptions,
  circuitBreaker,
  circuitBreakerOptionsSchema,
} from './circuit-breaker.js'
export { type CircuitOpenFacts, circuitOpenError } from './circuit-open-error.js'
export { type ConsecutiveCounts, type ConsecutiveOptions, consecutive, consecutiveOptionsSchema } from './consecutive.js'
export type { FailurePolicy } from './failure-policy.js'
export { indictsTool } from './indicts-tool.js'
export { type MemoryBreakerStore, memoryBreakerStore } from './memory-breaker-store.js'
export { RUN_STATE_KEY } from './run-state-store.js'
export {
  type SamplingBucket,
  type SamplingCounts,
  type SamplingOptions,
  sampling,
  samplingOptionsSchema,
} from './sampling.js'
export { type UpdateRound, updateRounds } from './update-rounds.js'
