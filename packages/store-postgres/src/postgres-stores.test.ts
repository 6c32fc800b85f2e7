import { createAgent } from '@shallot/agent'
import { circuitBreaker } from '@shallot/circuit-breaker'
import { type Clock, createStack, defineTool, OptionsError, systemClock, ToolError } from '@shallot/core'
import { idempotency } from '@shallot/idempotency'
import { type RetryOptions, retry } from '@shallot/retry'
import { manualClock, scriptedModel } from '@shallot/testing'
import pg from 'pg'
import { describe, expect, it, vi } from 'vitest'
import { z } from 'zod'
import { type PostgresStores, postgresStores } from './index.js'
import { usePostgres } from './test-support/postgres-fixture.js'
import { spyLogger } from './test-support/spy-logger.js'

const fixture = usePostgres()

function fleetStack(stores: PostgresStores, clock: Clock = manualClock(), retryOptions: RetryOptions = { backoff: 'none' }) {
  const effects = { charges: 0, searches: 0 }
  let searchFails = false
  const charge = defineTool({
    name: 'charge_card',
    description: 'charge',
    input: z.object({ order: z.string() }),
    effect: 'write',
    execute: ({ order }) => {
      effects.charges++
      return { charged: order }
    },
  })
  const search = defineTool({
    name: 'search',
    description: 'search',
    input: z.object({ q: z.string() }),
    effect: 'read',
    execute: () => {
      effects.searches++
      if (searchFails) throw new ToolError('upstream_error', 'upstream answered 503')
      return 'hit'
    },
  })
  const stack = createStack({
    clock,
    tools: [charge, search],
    middleware: [
      idempotency({ store: stores.idempotency, key: (_ctx, args) => (args as { order: string }).order }),
      circuitBreaker({ store: stores.breaker }),
      retry({ ...retryOptions, retryBudget: stores.retryBudget }),
    ],
  })
  const failSearches = (fails: boolean) => {
    searchFails = fails
  }
  return { stack, effects, clock, failSearches }
}

describe('postgresStores(): options', () => {
  it('refuses a bad option with its name and the value it got', () => {
    const pool = fixture.pool
    expect(() => postgresStores({ pool, tablePrefix: 'Has-Caps' })).toThrow(OptionsError)
    expect(() => postgresStores({ pool, tablePrefix: 'x"; DROP TABLE y; --' })).toThrow(/option tablePrefix: .*lowercase.*got "x\\"; DROP/)
    expect(() => postgresStores({ pool, timeoutMs: 0 })).toThrow(/option timeoutMs/)
    expect(() => postgresStores({ pool, timeoutMs: Number.NaN })).toThrow(/option timeoutMs/)
    expect(() => postgresStores({ pool, retryBudget: { capacity: -1 } })).toThrow(/option retryBudget\.capacity/)
    expect(() => postgresStores({ pool, tableprefix: 'x_' } as never)).toThrow(/tableprefix/)
    expect(() => postgresStores({ pool: new pg.Client() as never })).toThrow(/option pool: must be a pg\.Pool/)
    expect(() => postgresStores({})).toThrow(/exactly one/)
    expect(() => postgresStores({ pool, connectionString: fixture.server.url })).toThrow(/exactly one/)
  })

  it('warns once when the pool has no error listener (a restart would crash the process), and not otherwise', async () => {
    const bare = new pg.Pool({ connectionString: fixture.server.url })
    const logger = spyLogger()
    postgresStores({ pool: bare, logger })
    expect(logger.warnings).toEqual([expect.objectContaining({ msg: expect.stringContaining('no "error" listener') })])
    await bare.end()
    const quiet = spyLogger()
    postgresStores({ pool: fixture.pool, logger: quiet })
    expect(quiet.warnings).toEqual([])
  })

  it('opens and ends its own pool from a connection string', async () => {
    const stores = postgresStores({ connectionString: fixture.server.url, tablePrefix: 'own_' })
    await stores.migrate()
    const begun = await stores.idempotency.begin('s k', 'h', 1000, 60_000)
    expect(begun.status).toBe('new')
    await stores.close()
    expect(stores.pool.ended).toBe(true)
  })
})

describe('postgresStores(): migrate()', () => {
  it('is safe to run from many workers at once and again later', async () => {
    const workers = Array.from({ length: 6 }, () => postgresStores({ pool: fixture.pool, tablePrefix: 'race_' }))
    await Promise.all(workers.map((w) => w.migrate()))
    await workers[0]?.migrate()
    const { rows } = await fixture.pool.query(`SELECT tablename FROM pg_tables WHERE tablename LIKE 'race\\_%' ORDER BY tablename`)
    expect(rows.map((r) => r.tablename)).toEqual([
      'race_breakers',
      'race_checkpoint_claims',
      'race_checkpoints',
      'race_idempotency',
      'race_pushback',
      'race_retry_budgets',
      'race_schema',
    ])
  })

  it('refuses to work on tables of a newer schema version', async () => {
    const stores = postgresStores({ pool: fixture.pool, tablePrefix: 'future_' })
    await stores.migrate()
    await fixture.pool.query(`UPDATE "future_schema" SET version = 99`)
    await expect(stores.migrate()).rejects.toMatchObject({ code: 'store_schema_newer', category: 'fatal' })
  })
})

describe('postgres retry budget', () => {
  it('never overspends one bucket shared by two workers: 30 concurrent takes of 1 from 10 tokens, 10 succeed', async () => {
    // Refills written at once (refillFlushMs 0): the bucket itself, without this worker's batching.
    const retryBudget = { name: 'shared', capacity: 10, refillFlushMs: 0 }
    const a = await fixture.stores({ retryBudget })
    const b = postgresStores({ pool: fixture.pool, tablePrefix: a.tablePrefix, retryBudget })
    const taken = await Promise.all(Array.from({ length: 30 }, (_, i) => (i % 2 ? a : b).retryBudget.tryTake(1)))
    expect(taken.filter(Boolean)).toHaveLength(10)
    expect(await b.retryBudget.available()).toBe(0)
    await a.retryBudget.refill(3)
    expect(await b.retryBudget.available()).toBe(3)
    await a.retryBudget.refill(100)
    expect(await b.retryBudget.available()).toBe(10)
  })

  for (const [what, spent] of [
    ['NaN', 'NaN'],
    ['Infinity', 'Infinity'],
    ['negative', '-3'],
  ] as const) {
    it(`fails closed on a ${what} spent count: reported empty, the take refused and the row rewritten as empty, then refilled by successes`, async () => {
      const logger = spyLogger()
      const stores = await fixture.stores({ logger, retryBudget: { capacity: 20, refillFlushMs: 0 } })
      await stores.retryBudget.tryTake(5)
      await fixture.pool.query(`UPDATE "${stores.tablePrefix}retry_budgets" SET spent = $1::float8`, [spent])
      expect(await stores.retryBudget.available()).toBe(0)
      // A refill cannot move garbage: the bucket stays closed until a take rewrites it.
      await stores.retryBudget.refill(1)
      expect(await stores.retryBudget.tryTake(5)).toBe(false)
      expect(await stores.retryBudget.available()).toBe(0)
      const { rows } = await fixture.pool.query(`SELECT spent FROM "${stores.tablePrefix}retry_budgets"`)
      expect(rows).toEqual([{ spent: 20 }])
      await stores.retryBudget.refill(6)
      expect(await stores.retryBudget.tryTake(5)).toBe(true)
      expect(await stores.retryBudget.available()).toBe(1)
      expect(logger.warnings.map((w) => w.msg)).toEqual([
        expect.stringContaining('reported as empty'),
        expect.stringContaining('rewritten as empty'),
      ])
    })
  }

  it('stops retries fleet-wide once the bucket is empty', async () => {
    const stores = await fixture.stores({ retryBudget: { capacity: 5 } })
    // A zero delay on the real clock: the budget, not the backoff, is what stops the second retry.
    const { stack, effects, failSearches } = fleetStack(stores, systemClock, { backoff: 'constant', baseMs: 0 })
    failSearches(true)
    expect(await stack.dispatch({ id: 'a', name: 'search', args: { q: 'a' } })).toMatchObject({ ok: false, attempts: 2 })
    expect(await stores.retryBudget.available()).toBe(0)
    expect(await stack.dispatch({ id: 'b', name: 'search', args: { q: 'b' } })).toMatchObject({ ok: false, attempts: 1 })
    expect(effects.searches).toBe(3)
  })
})

describe('postgresStores(): a slow server (a row lock held by another session)', () => {
  it('answers within the timeout with store_unavailable, and gives back the key its late begin claimed', async () => {
    const clock = manualClock()
    const logger = spyLogger()
    const stores = await fixture.stores({ clock, timeoutMs: 300, logger })
    const { stack, effects } = fleetStack(stores, clock)
    const table = `"${stores.tablePrefix}idempotency"`
    const blocker = await fixture.pool.connect()
    let refused: Awaited<ReturnType<typeof stack.dispatch>>
    try {
      await blocker.query('BEGIN')
      await blocker.query(`INSERT INTO ${table} VALUES ('default o-late', 'h', 'pending', 1, 0, 0, NULL)`)
      const call = stack.dispatch({ id: 'w1', name: 'charge_card', args: { order: 'o-late' } })
      await vi.waitFor(async () => {
        const { rows } = await fixture.pool.query(`SELECT count(*) AS n FROM pg_locks WHERE NOT granted`)
        expect(Number(rows[0].n)).toBeGreaterThan(0)
      })
      await clock.advance(300)
      refused = await call
    } finally {
      await blocker.query('ROLLBACK')
      blocker.release()
    }
    expect(refused).toMatchObject({ ok: false, error: { code: 'store_unavailable', retryable: true, safeToRepeat: true } })
    expect(refused.trace.map((e) => e.type)).toContain('idempotency.store_error')
    expect(effects.charges).toBe(0)
    // The begin went on after its deadline and claimed the key; it gives it back at once.
    await vi.waitFor(() =>
      expect(logger.infos).toContainEqual({
        msg: expect.stringContaining('after its deadline'),
        fields: expect.objectContaining({ released: true }),
      }),
    )
    expect((await fixture.pool.query(`SELECT * FROM ${table}`)).rows).toEqual([])
    expect(await stack.dispatch({ id: 'w2', name: 'charge_card', args: { order: 'o-late' } })).toMatchObject({ ok: true, replayed: false })
    expect(effects.charges).toBe(1)
    expect(clock.pending).toBe(0)
  })
})

describe('postgresStores(): the server stopped and started again', () => {
  it('refuses writes softly while it is down, runs reads on the local breaker, and after the start replays what was stored', async () => {
    const stores = await fixture.stores({ timeoutMs: 2000 })
    const { stack, effects } = fleetStack(stores)
    expect(await stack.dispatch({ id: 'a', name: 'charge_card', args: { order: 'o-kept' } })).toMatchObject({ ok: true, replayed: false })
    await fixture.server.stop('fast')
    try {
      const down = await stack.dispatch({ id: 'b', name: 'charge_card', args: { order: 'o-new' } })
      expect(down).toMatchObject({ ok: false, error: { code: 'store_unavailable', category: 'transient', safeToRepeat: true } })
      const read = await stack.dispatch({ id: 'c', name: 'search', args: { q: 'x' } })
      expect(read).toMatchObject({ ok: true })
      expect(read.trace.map((e) => e.type)).toContain('circuit-breaker.store_error')
    } finally {
      await fixture.server.start()
    }
    expect(await stack.dispatch({ id: 'd', name: 'charge_card', args: { order: 'o-kept' } })).toMatchObject({
      ok: true,
      replayed: true,
      value: { charged: 'o-kept' },
    })
    expect(await stack.dispatch({ id: 'e', name: 'charge_card', args: { order: 'o-new' } })).toMatchObject({ ok: true, replayed: false })
    expect(effects.charges).toBe(2)
  }, 60_000)

  it('keeps every committed record through a crash of the server (immediate stop, WAL recovery)', async () => {
    const stores = await fixture.stores()
    const { stack, effects } = fleetStack(stores)
    for (const order of ['o-1', 'o-2', 'o-3']) await stack.dispatch({ id: order, name: 'charge_card', args: { order } })
    await fixture.server.stop('immediate')
    await fixture.server.start()
    for (const order of ['o-1', 'o-2', 'o-3']) {
      await vi.waitFor(async () =>
        expect(await stack.dispatch({ id: `again-${order}`, name: 'charge_card', args: { order } })).toMatchObject({
          ok: true,
          replayed: true,
        }),
      )
    }
    expect(effects.charges).toBe(3)
  }, 60_000)
})

describe('postgresStores(): what the model reads while the server is away', () => {
  it('reads a soft store_unavailable without hosts or credentials, and its next attempt after the restart charges once', async () => {
    const stores = postgresStores({
      connectionString: fixture.server.url.replace('shallot@', 'shallot:s3cret-pw@'),
      tablePrefix: 'model_',
      timeoutMs: 2000,
    })
    await stores.migrate()
    let charges = 0
    const chargeCard = defineTool({
      name: 'charge_card',
      description: 'Charge a card',
      input: z.object({ order: z.string() }),
      effect: 'write',
      execute: ({ order }) => {
        charges++
        return { charged: order }
      },
    })
    const seen: string[] = []
    const model = scriptedModel([
      async () => {
        await fixture.server.stop('fast')
        return { toolCalls: [{ name: 'charge_card', args: { order: 'o-1' } }] }
      },
      async ({ lastResults }) => {
        seen.push(...lastResults.map((r) => r.content))
        await fixture.server.start()
        return { toolCalls: [{ name: 'charge_card', args: { order: 'o-1' } }] }
      },
      ({ lastResults }) => ({ text: lastResults[0]?.ok ? 'charged' : 'gave up' }),
    ])
    const agent = createAgent({ model, tools: [chargeCard], middleware: [idempotency({ store: stores.idempotency })] })
    try {
      expect(await agent.run({ input: 'charge o-1' })).toMatchObject({ status: 'completed', output: 'charged' })
    } finally {
      await stores.close()
    }
    expect(seen).toHaveLength(1)
    expect(seen[0]).toContain('store_unavailable')
    for (const secret of ['s3cret', String(fixture.server.port), '127.0.0.1', 'ECONNREFUSED']) expect(seen[0]).not.toContain(secret)
    expect(charges).toBe(1)
  }, 60_000)
})
