export { idempotencyDefinition } from './definition.js'
export { idempotency } from './idempotency.js'
export type { IdempotencyOptions, KeyFunction, ScopeFunction } from './idempotency-options.js'
export {
  type Awaitable,
  type BeginResult,
  type IdempotencyStore,
  isIdempotencyStore,
  type StoredResult,
  type SyncIdempotencyStore,
} from './idempotency-store.js'
export {
  type MemoryIdempotencyStore,
  type MemoryIdempotencyStoreOptions,
  memoryIdempotencyStore,
} from './memory-idempotency-store.js'
export { parseStoredResult } from './stored-result.js'
