export { idempotency } from './idempotency.js'
export { type IdempotencyOptions, idempotencyOptionsSchema, type KeyFunction, type ScopeFunction } from './idempotency-options.js'
export {
  type Awaitable,
  type BeginResult,
  type IdempotencyStore,
  isIdempotencyStore,
  type StoredResult,
  type SyncIdempotencyStore,
} from './idempotency-store.js'
export { type MemoryStore, type MemoryStoreOptions, memoryStore, memoryStoreOptionsSchema } from './memory-store.js'
export { type SettleAction, settleAction } from './settle-action.js'
export { MAX_RESULT_DEPTH, parseStoredResult, storedResultProblem } from './stored-result.js'
