export { corruptCheckpoint, type PostgresCheckpoints } from './postgres-checkpoints.js'
export {
  type PostgresPushbackStore,
  type PostgresPushbackStoreOptions,
  postgresPushbackStore,
  postgresPushbackStoreOptionsSchema,
} from './postgres-pushback-store.js'
export {
  type PostgresRateLimitStore,
  type PostgresRateLimitStoreOptions,
  postgresRateLimitStore,
  postgresRateLimitStoreOptionsSchema,
} from './postgres-rate-limit-store.js'
export type { PostgresRetryBudget } from './postgres-retry-budget.js'
export { type PostgresStores, postgresStores, type SweepCounts } from './postgres-stores.js'
export { type PostgresStoresOptions, postgresStoresOptionsSchema } from './postgres-stores-options.js'
