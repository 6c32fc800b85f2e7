import pg from 'pg'
import { afterAll, beforeAll } from 'vitest'
import { type PostgresStoresOptions, postgresStores } from '../index.js'
import { type PostgresServer, type PostgresServerOptions, startPostgresServer } from './postgres-server.js'

/** A test file's private PostgreSQL: its server, a pool, and fresh migrated stores on their own table prefix. */
export interface PostgresFixture {
  readonly server: PostgresServer
  readonly pool: pg.Pool
  /** Stores on a table prefix no other test uses, migrated. */
  stores(options?: Omit<PostgresStoresOptions, 'pool' | 'connectionString'>): Promise<ReturnType<typeof postgresStores>>
}

let prefixes = 0

/**
 * Starts a private PostgreSQL and a pool before the file's tests and stops both after them, even
 * when a test failed. Call it at the top level of a test file.
 */
export function usePostgres(options: PostgresServerOptions = {}): PostgresFixture {
  const fixture = {
    async stores(options = {}) {
      // A generous deadline unless the test is about deadlines: a loaded CI machine must not turn into store_unavailable.
      const stores = postgresStores({ tablePrefix: `t${++prefixes}_`, timeoutMs: 10_000, ...options, pool: fixture.pool })
      await stores.migrate()
      return stores
    },
  } as PostgresFixture & { server: PostgresServer; pool: pg.Pool }
  beforeAll(async () => {
    fixture.server = await startPostgresServer(options)
    fixture.pool = new pg.Pool({ connectionString: fixture.server.url, max: 20, connectionTimeoutMillis: 2000 })
    // A server stopped mid-test fails the idle connections; the pool replaces them.
    fixture.pool.on('error', () => {})
  }, 60_000)
  afterAll(async () => {
    await fixture.pool?.end()
    await fixture.server?.close()
  }, 60_000)
  return fixture
}
