// The Lua scripts behind the three stores. Each runs atomically in Redis; time comes from Redis's
// own TIME (milliseconds, fractional) unless a test passes a time in ARGV[1].

const NOW = `
local function now_ms(arg)
  if arg ~= '' then return tonumber(arg) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
end
`

/**
 * Idempotency `begin`. KEYS: record, fence counter. ARGV: now, argsHash, leaseMs, ttlMs.
 * Record fields: a argsHash, s state (p pending, d done, u unknown, x lease expired), t token,
 * l lease end, e expiry, r result JSON. A pending record whose lease ran out becomes `x` the first
 * time anyone sees it, which fences its owner out: what the fleet was told (unknown) never flips.
 */
export const BEGIN_LUA = `${NOW}
local now = now_ms(ARGV[1])
local hash, lease, ttl = ARGV[2], math.floor(tonumber(ARGV[3])), math.floor(tonumber(ARGV[4]))
local r = redis.call('HMGET', KEYS[1], 'a', 's', 't', 'l', 'e', 'r')
local corrupt = '0'
if r[1] or r[2] or r[3] or r[4] or r[5] or r[6] then
  local a, s, t, l, e = r[1], r[2], r[3], tonumber(r[4]), tonumber(r[5])
  local valid = a and t and l and e and (s == 'p' or s == 'u' or s == 'x' or (s == 'd' and r[6]))
  if not valid then
    corrupt = '1'
    redis.call('DEL', KEYS[1])
  elseif e <= now then
    redis.call('DEL', KEYS[1])
  else
    if a ~= hash then return {'mismatch'} end
    if s == 'd' then return {'done', r[6], t} end
    if s == 'u' then return {'unknown', 'recorded'} end
    if s == 'p' and l > now then return {'in_flight'} end
    if s == 'p' then redis.call('HSET', KEYS[1], 's', 'x') end
    return {'unknown', 'lease_expired'}
  end
end
local token = tostring(redis.call('INCR', KEYS[2]))
redis.call('HSET', KEYS[1], 'a', hash, 's', 'p', 't', token, 'l', tostring(now + lease), 'e', tostring(now + lease + ttl))
redis.call('PEXPIRE', KEYS[1], lease + ttl)
return {'new', token, corrupt}
`

/**
 * Idempotency `complete`, `release` and `markUnknown`. KEYS: record. ARGV: now, token, op
 * (complete, release, unknown), ttlMs, result JSON. Only a live pending record with this token moves.
 */
export const SETTLE_LUA = `${NOW}
local now = now_ms(ARGV[1])
local r = redis.call('HMGET', KEYS[1], 's', 't', 'e')
local e = tonumber(r[3])
if r[1] ~= 'p' or r[2] ~= ARGV[2] or not e or e <= now then return 0 end
local op, ttl = ARGV[3], math.floor(tonumber(ARGV[4]))
if op == 'release' then
  redis.call('DEL', KEYS[1])
  return 1
end
if op == 'complete' then
  redis.call('HSET', KEYS[1], 's', 'd', 'r', ARGV[5], 'e', tostring(now + ttl))
else
  redis.call('HSET', KEYS[1], 's', 'u', 'e', tostring(now + ttl))
end
redis.call('PEXPIRE', KEYS[1], ttl)
return 1
`

/** Deletes a record whose stored result did not validate, if it still holds `token`. KEYS: record. ARGV: token. */
export const DISCARD_LUA = `
if redis.call('HGET', KEYS[1], 't') ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
return 1
`

/** Breaker read. KEYS: state. ARGV: now. Returns the state JSON (or ''), its version and Redis's now. */
export const BREAKER_READ_LUA = `${NOW}
local r = redis.call('HMGET', KEYS[1], 's', 'v')
return {r[1] or '', r[2] or '0', tostring(now_ms(ARGV[1]))}
`

/** Breaker compare-and-set. KEYS: state. ARGV: expected version, state JSON, ttlMs. 1 when written. */
export const BREAKER_WRITE_LUA = `
local v = redis.call('HGET', KEYS[1], 'v') or '0'
if v ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 's', ARGV[2], 'v', tostring((tonumber(v) or 0) + 1))
redis.call('PEXPIRE', KEYS[1], math.floor(tonumber(ARGV[3])))
return 1
`

// The bucket stores what was spent, so a missing key is a full bucket and nobody has to create it.
const SPENT = `
local function spent_of(key)
  local raw = redis.call('GET', key)
  if not raw then return 0, 0 end
  local n = tonumber(raw)
  if not n or n ~= n or n < 0 or n == math.huge then
    redis.call('DEL', key)
    return 0, 1
  end
  return n, 0
end
`

/** Retry budget take. KEYS: bucket. ARGV: capacity, tokens. Returns {taken 0|1, corrupt 0|1}. */
export const BUDGET_TAKE_LUA = `${SPENT}
local spent, corrupt = spent_of(KEYS[1])
local cost = tonumber(ARGV[2])
if spent + cost > tonumber(ARGV[1]) then return {0, corrupt} end
if cost > 0 then redis.call('SET', KEYS[1], tostring(spent + cost)) end
return {1, corrupt}
`

/** Retry budget refill. KEYS: bucket. ARGV: tokens. Returns {0, corrupt 0|1}. */
export const BUDGET_REFILL_LUA = `${SPENT}
local spent, corrupt = spent_of(KEYS[1])
local left = spent - tonumber(ARGV[1])
if left <= 0 then redis.call('DEL', KEYS[1]) else redis.call('SET', KEYS[1], tostring(left)) end
return {0, corrupt}
`
