import { Redis } from 'ioredis'
import { afterAll, beforeAll } from 'vitest'
import { type RedisServer, startRedisServer } from './redis-server.js'

/** A test file's private Redis: its server and a fail-fast client, ready in `beforeAll`. */
export interface RedisFixture {
  readonly server: RedisServer
  readonly client: Redis
}

/**
 * Starts a private redis-server and connects a client that fails fast (no offline queue, one retry)
 * before the file's tests, and closes both after them. Call it at the top level of a test file.
 */
export function useRedis(): RedisFixture {
  const fixture = {} as { server: RedisServer; client: Redis }
  beforeAll(async () => {
    fixture.server = await startRedisServer()
    fixture.client = new Redis(fixture.server.url, { maxRetriesPerRequest: 1, enableOfflineQueue: false, lazyConnect: true })
    await fixture.client.connect()
  })
  afterAll(async () => {
    fixture.client?.disconnect()
    await fixture.server?.close()
  })
  return fixture
}
