/** The quoted names of one table prefix's tables, sequence and indexes. */
export interface Tables {
  readonly prefix: string
  readonly schema: string
  readonly idempotency: string
  readonly tokens: string
  readonly breakers: string
  readonly budgets: string
  readonly checkpoints: string
  readonly claims: string
}

/** The schema version this package writes and reads. */
export const SCHEMA_VERSION = 1

/**
 * The names of a prefix's tables. The prefix is validated as lowercase identifier characters and
 * every name is double-quoted, so no option can reach the SQL as anything but a name.
 *
 * @example
 * tables('shallot_').idempotency // '"shallot_idempotency"'
 */
export function tables(prefix: string): Tables {
  const name = (suffix: string) => `"${prefix}${suffix}"`
  return {
    prefix,
    schema: name('schema'),
    idempotency: name('idempotency'),
    tokens: name('idempotency_token'),
    breakers: name('breakers'),
    budgets: name('retry_budgets'),
    checkpoints: name('checkpoints'),
    claims: name('checkpoint_claims'),
  }
}

/**
 * `now` in milliseconds inside a statement: the bigint parameter `$1` when a test clock gives one,
 * else the server's wall clock. One clock for the whole fleet, never a worker's.
 */
export const NOW = `COALESCE($1::bigint, floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint)`

/**
 * The DDL of one prefix (idempotent: every statement is `IF NOT EXISTS`). JSON payloads are `text`,
 * not `jsonb`: jsonb refuses `\u0000` in strings and reorders keys, and a store must hand back
 * exactly what it was given.
 *
 * @example
 * for (const statement of schemaStatements(tables('shallot_'))) await client.query(statement)
 */
export function schemaStatements(t: Tables): string[] {
  const index = (suffix: string) => `"${t.prefix}${suffix}"`
  return [
    `CREATE TABLE IF NOT EXISTS ${t.idempotency} (
      key text PRIMARY KEY,
      args_hash text NOT NULL,
      state text NOT NULL,
      token bigint NOT NULL,
      lease_until bigint NOT NULL,
      expires_at bigint NOT NULL,
      result text
    )`,
    `CREATE INDEX IF NOT EXISTS ${index('idempotency_expires_at')} ON ${t.idempotency} (expires_at)`,
    `CREATE SEQUENCE IF NOT EXISTS ${t.tokens} AS bigint`,
    `CREATE TABLE IF NOT EXISTS ${t.breakers} (
      key text PRIMARY KEY,
      state text,
      expires_at bigint NOT NULL
    )`,
    `CREATE INDEX IF NOT EXISTS ${index('breakers_expires_at')} ON ${t.breakers} (expires_at)`,
    `CREATE TABLE IF NOT EXISTS ${t.budgets} (
      name text PRIMARY KEY,
      spent double precision NOT NULL
    )`,
    `CREATE TABLE IF NOT EXISTS ${t.checkpoints} (
      run_id text PRIMARY KEY,
      snapshot text NOT NULL,
      updated_at bigint NOT NULL
    )`,
    `CREATE INDEX IF NOT EXISTS ${index('checkpoints_updated_at')} ON ${t.checkpoints} (updated_at)`,
    `CREATE TABLE IF NOT EXISTS ${t.claims} (
      run_id text PRIMARY KEY,
      holder text NOT NULL,
      lease_until bigint NOT NULL
    )`,
  ]
}
