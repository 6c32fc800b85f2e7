import { OptionsError } from '@shallot/core'
import { MAX_PUSHBACK_MS } from '@shallot/rate-limit'
import { pushbackStoreContract } from '@shallot/rate-limit/contract'
import { manualClock } from '@shallot/testing'
import pg from 'pg'
import { describe, expect, it } from 'vitest'
import { postgresPushbackStore } from './index.js'
import { usePostgres } from './test-support/postgres-fixture.js'

const fixture = usePostgres()
let prefixes = 0
const freshPrefix = () => `pb${++prefixes}_`
const EPOCH = 1_700_000_000_000

async function migrated(options: Omit<Parameters<typeof postgresPushbackStore>[0], 'pool'> = {}) {
  const store = postgresPushbackStore({ pool: fixture.pool, tablePrefix: freshPrefix(), timeoutMs: 10_000, ...options })
  await store.migrate()
  return store
}

describe('postgresPushbackStore keeps the pushback store contract (one statement each, server time replaced by the contract clock)', () => {
  for (const c of pushbackStoreContract((clock) => migrated({ wallNow: () => clock.now() }))) it(c.name, () => c.run())
})

describe('postgresStores().pushback keeps it too: migrate() makes its table', () => {
  for (const c of pushbackStoreContract(async (clock) => (await fixture.stores({ wallNow: () => clock.now() })).pushback)) {
    it(c.name, () => c.run())
  }
})

describe('postgresPushbackStore', () => {
  it('holds on the server’s clock without a test clock: a fresh hold reads back a little less than it was given', async () => {
    const store = await migrated()
    await store.hold('model:openai:gpt-4o', 2_000)
    const held = await store.heldFor('model:openai:gpt-4o')
    expect(held).toBeGreaterThan(1_000)
    expect(held).toBeLessThanOrEqual(2_000)
  })

  it.each(['NaN', 'Infinity'])('answers a hold of %s as a soft store_unavailable, and a new hold replaces it', async (corrupt) => {
    const tablePrefix = freshPrefix()
    const store = await migrated({ tablePrefix, wallNow: () => EPOCH })
    await fixture.pool.query(`INSERT INTO "${tablePrefix}pushback" VALUES ('k', $1::double precision)`, [corrupt])
    await expect(store.heldFor('k')).rejects.toMatchObject({ code: 'store_unavailable', safeToRepeat: true })
    await store.hold('k', 5_000)
    expect(await store.heldFor('k')).toBe(5_000)
  })

  it('replaces a hold in place that ends further ahead than MAX_PUSHBACK_MS, and reads one as it is (the layer refuses it)', async () => {
    const tablePrefix = freshPrefix()
    const store = await migrated({ tablePrefix, wallNow: () => EPOCH })
    await fixture.pool.query(`INSERT INTO "${tablePrefix}pushback" VALUES ('k', $1)`, [EPOCH + MAX_PUSHBACK_MS * 10])
    expect(await store.heldFor('k')).toBe(MAX_PUSHBACK_MS * 10)
    await store.hold('k', 5_000)
    expect(await store.heldFor('k')).toBe(5_000)
  })

  it('rejects with a soft store_unavailable past timeoutMs when PostgreSQL does not answer', async () => {
    const clock = manualClock()
    // A pool whose connections never come: every statement waits for one.
    const silent = new pg.Pool({ connectionString: fixture.server.url, max: 1 })
    silent.on('error', () => {})
    const held = await silent.connect()
    try {
      const store = postgresPushbackStore({ pool: silent, clock, timeoutMs: 100 })
      const read = expect(store.heldFor('k')).rejects.toMatchObject({ code: 'store_unavailable', safeToRepeat: true })
      const hold = expect(store.hold('k', 1_000)).rejects.toMatchObject({ code: 'store_unavailable' })
      await clock.advance(100)
      await Promise.all([read, hold])
    } finally {
      held.release()
      await silent.end()
    }
  })

  it('refuses bad options, naming them', () => {
    expect(() => postgresPushbackStore({} as never)).toThrow(OptionsError)
    expect(() => postgresPushbackStore({} as never)).toThrow(/option pool: is required/)
    expect(() => postgresPushbackStore({ pool: fixture.pool, tablePrefix: 'A-b' })).toThrow(/option tablePrefix/)
  })
})
