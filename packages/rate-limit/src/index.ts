export { rateLimitDefinition, rateLimitDefinition as definition, rateLimitFileOptionsSchema } from './definition.js'
export { gcra, gcraRefund, type RateDecision, type RateReservation, type RateRule } from './gcra.js'
export { modelRateKey } from './limit-model-calls.js'
export {
  isPushbackStore,
  MAX_PUSHBACK_MS,
  type MemoryPushbackStoreOptions,
  memoryPushbackStore,
  type PushbackStore,
} from './pushback-store.js'
export { type RateLimitLayer, type RateLimitOptions, rateLimit, rateLimitOptionsSchema } from './rate-limit.js'
export { isRateLimitStore, type MemoryRateLimitStoreOptions, memoryRateLimitStore, type RateLimitStore } from './rate-limit-store.js'
export { type RateLimitFacts, rateLimitedError } from './rate-limited-error.js'
