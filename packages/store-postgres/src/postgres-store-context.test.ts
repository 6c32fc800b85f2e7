import { describe, expect, it, vi } from 'vitest'
import { transaction } from './postgres-store-context.js'
import { usePostgres } from './test-support/postgres-fixture.js'

const pg = usePostgres()
const open = new AbortController().signal

describe('transaction()', () => {
  it('rejects, and crashes nothing, when the server ends its connection between two queries', async () => {
    const failed = transaction(pg.pool, open, async (query) => {
      const { rows } = await query('SELECT pg_backend_pid() AS pid', [])
      await pg.pool.query('SELECT pg_terminate_backend($1)', [rows[0]?.pid])
      // Wait until the FATAL message has reached this idle connection, then use it again.
      await vi.waitFor(async () => {
        const gone = await pg.pool.query('SELECT count(*) AS n FROM pg_stat_activity WHERE pid = $1', [rows[0]?.pid])
        expect(Number(gone.rows[0].n)).toBe(0)
      })
      await new Promise((resolve) => setImmediate(resolve))
      await query('SELECT 1', [])
    })
    await expect(failed).rejects.toThrow()
    // The broken connection was destroyed, not returned: the pool's connections all work.
    const answers = await Promise.all(Array.from({ length: 25 }, () => pg.pool.query('SELECT 1 AS one')))
    expect(answers.every((a) => a.rows[0].one === 1)).toBe(true)
  })

  it('starts nothing once its deadline passed while it waited for a connection', async () => {
    const late = new AbortController()
    late.abort()
    const work = vi.fn()
    await expect(transaction(pg.pool, late.signal, work)).rejects.toMatchObject({ name: 'AbortError' })
    expect(work).not.toHaveBeenCalled()
  })
})
