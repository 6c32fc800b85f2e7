import { idempotencyStoreContract } from '@shallot/idempotency/contract'
import { describe, it } from 'vitest'
import { usePostgres } from './test-support/postgres-fixture.js'

const pg = usePostgres()

describe('postgres idempotency store: the store contract, on a real PostgreSQL', () => {
  // The contract moves time itself; `now` puts the statements on its clock instead of the server's.
  for (const c of idempotencyStoreContract(async (now) => (await pg.stores({ now })).idempotency)) {
    it(c.name, () => c.run())
  }
})
