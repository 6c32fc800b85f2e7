import assert from 'node:assert/strict'
import { MAX_PUSHBACK_MS, type PushbackStore } from './pushback-store.js'

/** Makes a fresh, empty store on `clock` (epoch ms the contract moves by hand; a shared store reads it instead of its server's). */
export type PushbackStoreFactory = (clock: { now(): number }) => PushbackStore | Promise<PushbackStore>

/** One case of the contract: register it with your test runner (`it(c.name, c.run)`). */
export interface PushbackStoreCase {
  readonly name: string
  run(): Promise<void>
}

const START = 1_700_000_000_000

/**
 * The behaviour every {@link PushbackStore} keeps, as cases to register with any test runner: a key is free
 * until held, held for what it was told and free once that passed; a longer hold in place stays and a
 * shorter one is extended; keys are kept apart
 * (`__proto__`, braces, spaces, one tenant's key and another's); and 50 concurrent holds of one key end
 * with the longest (the operation is atomic). The memory, Redis, PostgreSQL and SQLite stores run it.
 *
 * @example
 * for (const c of pushbackStoreContract(() => memoryPushbackStore())) it(c.name, () => c.run())
 */
export function pushbackStoreContract(create: PushbackStoreFactory): PushbackStoreCase[] {
  async function fresh() {
    let now = START
    const store = await create({ now: () => now })
    // Whole milliseconds: a server's clock reads with microseconds, and a hold is never about less than one.
    const heldFor = async (key: string) => Math.round(await store.heldFor(key, now - START))
    const hold = async (key: string, ms: number) => void (await store.hold(key, ms, now - START))
    return { store, hold, heldFor, advance: (ms: number) => void (now += ms) }
  }
  const cases: PushbackStoreCase[] = []
  const add = (name: string, run: () => Promise<void>) => cases.push({ name, run })

  add('a key is free until held, held for what it was told, and free once that passed', async () => {
    const { hold, heldFor, advance } = await fresh()
    assert.equal(await heldFor('model:openai:gpt-4o'), 0)
    await hold('model:openai:gpt-4o', 30_000)
    assert.equal(await heldFor('model:openai:gpt-4o'), 30_000)
    advance(10_000)
    assert.equal(await heldFor('model:openai:gpt-4o'), 20_000)
    advance(20_000)
    assert.equal(await heldFor('model:openai:gpt-4o'), 0)
    advance(3_600_000)
    assert.equal(await heldFor('model:openai:gpt-4o'), 0)
  })

  add('keeps a longer hold in place, and extends a shorter one', async () => {
    const { hold, heldFor, advance } = await fresh()
    await hold('k', 30_000)
    await hold('k', 5_000)
    assert.equal(await heldFor('k'), 30_000, 'a shorter hold does not cut a longer one')
    advance(20_000)
    await hold('k', 60_000)
    assert.equal(await heldFor('k'), 60_000, 'a longer hold extends it')
  })

  add('holds a key again once its hold passed', async () => {
    const { hold, heldFor, advance } = await fresh()
    await hold('k', 1_000)
    advance(5_000)
    await hold('k', 2_000)
    assert.equal(await heldFor('k'), 2_000)
  })

  add('keeps keys apart: __proto__, braces, spaces, non-ASCII, and one tenant from another', async () => {
    const { hold, heldFor } = await fresh()
    const keys = ['__proto__', 'constructor', 'a{b}', 'a%7bb%7d', 'tenant a', 'tënant', 'tenant-a:model:openai:gpt-4o']
    for (const [i, key] of keys.entries()) await hold(key, 1_000 * (i + 1))
    for (const [i, key] of keys.entries()) assert.equal(await heldFor(key), 1_000 * (i + 1), `the hold of ${JSON.stringify(key)}`)
    for (const other of ['tenant-b:model:openai:gpt-4o', 'model:openai:gpt-4o', '', 'a', 'a{b}x', 'prototype']) {
      assert.equal(await heldFor(other), 0, `${JSON.stringify(other)} is not held`)
    }
  })

  add('ends 50 concurrent holds of one key with the longest (atomic)', async () => {
    const { hold, heldFor } = await fresh()
    const lengths = Array.from({ length: 50 }, (_, i) => ((i * 37) % 50) * 1_000 + 1_000)
    await Promise.all(lengths.map((ms) => hold('k', ms)))
    assert.equal(await heldFor('k'), 50_000)
  })

  add('never answers past MAX_PUSHBACK_MS for a hold it was given at most that long', async () => {
    const { hold, heldFor } = await fresh()
    await hold('k', MAX_PUSHBACK_MS)
    const held = await heldFor('k')
    assert.ok(held > 0 && held <= MAX_PUSHBACK_MS, `held ${held} ms`)
  })
  return cases
}
