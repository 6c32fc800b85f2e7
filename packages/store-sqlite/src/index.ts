export {
  type SqliteCheckpoints,
  type SqliteCheckpointsOptions,
  sqliteCheckpoints,
  sqliteCheckpointsOptionsSchema,
} from './sqlite-checkpoints.js'
export {
  type SqlitePushbackStore,
  type SqlitePushbackStoreOptions,
  sqlitePushbackStore,
  sqlitePushbackStoreOptionsSchema,
} from './sqlite-pushback-store.js'
export { type SqliteDatabase, type SqliteStore, type SqliteStoreOptions, sqliteStore, sqliteStoreOptionsSchema } from './sqlite-store.js'
