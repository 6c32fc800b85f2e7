/**
 * The Redis keys of one `redisStores()` instance.
 *
 * @example
 * await client.hgetall(redisKeys('shallot').breaker('search'))
 */
export interface RedisKeys {
  /** The record of an idempotency store key (`scope key`) and the fencing counter of its scope: one hash slot. */
  idempotency(storeKey: string): { readonly record: string; readonly fence: string }
  /** The state of one breaker. */
  breaker(key: string): string
  /** The token bucket of one retry budget. */
  retryBudget(name: string): string
}

// The hash tag must end at the scope's own end, so the braces a scope may hold are escaped.
const tag = (text: string): string => text.replace(/[%{}]/g, (c) => `%${c.charCodeAt(0).toString(16)}`)

/**
 * Names keys `prefix:{scope}:…`. The braces are a Redis Cluster hash tag: an idempotency record and
 * its scope's fencing counter live in one slot, so one Lua script may touch both; different scopes
 * (and breakers, and budgets) spread over the cluster. A scope's `%`, `{` and `}` are escaped inside
 * the tag, so no two scopes can share a key.
 *
 * @example
 * redisKeys('shallot').idempotency('tenant-a order-42')
 * // { record: 'shallot:{tenant-a}:idem:order-42', fence: 'shallot:{tenant-a}:fence' }
 */
export function redisKeys(prefix: string): RedisKeys {
  return {
    idempotency(storeKey) {
      // idempotency() hands stores `scope key`; a scope never holds a space.
      const space = storeKey.indexOf(' ')
      if (space < 0) return { record: `${prefix}:{${tag(storeKey)}}:idem`, fence: `${prefix}:{${tag(storeKey)}}:fence` }
      const scope = tag(storeKey.slice(0, space))
      return { record: `${prefix}:{${scope}}:idem:${storeKey.slice(space + 1)}`, fence: `${prefix}:{${scope}}:fence` }
    },
    breaker: (key) => `${prefix}:{${tag(key)}}:breaker`,
    retryBudget: (name) => `${prefix}:{${tag(name)}}:retry-budget`,
  }
}
