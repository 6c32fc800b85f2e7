import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { OptionsError } from '@shallot/core'
import { MAX_PUSHBACK_MS } from '@shallot/rate-limit'
import { pushbackStoreContract } from '@shallot/rate-limit/contract'
import Database from 'better-sqlite3'
import { afterAll, describe, expect, it } from 'vitest'
import { sqlitePushbackStore } from './index.js'

const dir = mkdtempSync(join(tmpdir(), 'shallot-pushback-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let files = 0
const freshPath = () => join(dir, `pushback-${++files}.db`)
const EPOCH = 1_700_000_000_000

describe('sqlitePushbackStore keeps the pushback store contract (its wall clock replaced by the contract clock)', () => {
  for (const c of pushbackStoreContract((clock) => sqlitePushbackStore({ path: freshPath(), wallNow: () => clock.now() }))) {
    it(c.name, () => c.run())
  }
})

describe('sqlitePushbackStore', () => {
  it('shares a hold between two connections to one file, as two processes would, and answers synchronously', () => {
    const path = freshPath()
    const a = sqlitePushbackStore({ path, wallNow: () => EPOCH })
    const b = sqlitePushbackStore({ path, wallNow: () => EPOCH + 10_000 })
    try {
      a.hold('model:openai:gpt-4o', 30_000)
      expect(b.heldFor('model:openai:gpt-4o')).toBe(20_000)
    } finally {
      a.close()
      b.close()
    }
  })

  it.each([
    ['text', "'soon'"],
    ['a blob', "x'00'"],
  ])('reads a hold that is %s as a failed store (a TypeError naming the key), and a new hold replaces it', (_, literal) => {
    const database = new Database(freshPath())
    try {
      const store = sqlitePushbackStore({ database, wallNow: () => EPOCH })
      database.exec(`INSERT INTO "shallot_pushback" VALUES ('k', ${literal})`)
      expect(() => store.heldFor('k')).toThrow(/sqlitePushbackStore: the hold of "k" is .*, not a time/)
      store.hold('k', 5_000)
      expect(store.heldFor('k')).toBe(5_000)
    } finally {
      database.close()
    }
  })

  it('replaces a hold in place that ends further ahead than MAX_PUSHBACK_MS', () => {
    const database = new Database(freshPath())
    try {
      const store = sqlitePushbackStore({ database, wallNow: () => EPOCH })
      database.prepare(`INSERT INTO "shallot_pushback" VALUES ('k', ?)`).run(EPOCH + MAX_PUSHBACK_MS * 10)
      expect(store.heldFor('k')).toBe(MAX_PUSHBACK_MS * 10)
      store.hold('k', 5_000)
      expect(store.heldFor('k')).toBe(5_000)
    } finally {
      database.close()
    }
  })

  it('refuses bad options, naming them', () => {
    expect(() => sqlitePushbackStore({} as never)).toThrow(OptionsError)
    expect(() => sqlitePushbackStore({ path: freshPath(), tableName: 'a-b' })).toThrow(/option tableName/)
    expect(() => sqlitePushbackStore({ path: freshPath(), database: {} as never })).toThrow(/option database/)
  })
})
