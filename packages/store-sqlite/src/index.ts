export { type SqliteDatabase, type SqliteStore, type SqliteStoreOptions, sqliteStore, sqliteStoreOptionsSchema } from './sqlite-store.js'
