// The Lua scripts behind the three stores. Each runs atomically in Redis; time comes from Redis's
// own TIME (milliseconds, fractional) unless a test passes a time in ARGV[1].

const NOW = `
local function now_ms(arg)
  if arg ~= '' then return tonumber(arg) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
end
`

const FINITE = `
local function finite(x)
  local n = tonumber(x)
  if n and n == n and n ~= math.huge and n ~= -math.huge then return n end
  return nil
end
`

// What is wrong with an idempotency record's fields r (HMGET a s t l e r), l and e read as finite numbers; nil when nothing.
const RECORD_PROBLEM = `
local function record_problem(r, l, e)
  local a, s, t = r[1], r[2], r[3]
  if not a or a == '' then return 'field a (arguments hash) is missing or empty' end
  if not (s == 'p' or s == 'd' or s == 'u' or s == 'x') then return 'field s (state) is not p, d, u or x' end
  if not t or not string.match(t, '^[1-9][0-9]*$') then return 'field t (token) is not a token this store hands out' end
  if not l then return 'field l (lease end) is not a finite number' end
  if not e then return 'field e (expiry) is not a finite number' end
  if s == 'd' and not r[6] then return 'a done record has no field r (result)' end
  if s ~= 'd' and r[6] then return 'a record that is not done holds field r (result)' end
  return nil
end
`

/**
 * Idempotency `begin`. KEYS: record, fence counter. ARGV: now, argsHash, leaseMs, ttlMs.
 * Record fields: a argsHash, s state (p pending, d done, u unknown, x lease expired), t token,
 * l lease end, e expiry, r result JSON. A pending record whose lease ran out becomes `x` the first
 * time anyone sees it, which fences its owner out: what the fleet was told (unknown) never flips.
 * A record that is not well-formed answers {'corrupt', problem} and is left as it is: replacing it
 * could run again a write it stands for. Only its own valid expiry removes it.
 */
export const BEGIN_LUA = `${NOW}${FINITE}${RECORD_PROBLEM}
local now = now_ms(ARGV[1])
local hash, lease, ttl = ARGV[2], math.floor(tonumber(ARGV[3])), math.floor(tonumber(ARGV[4]))
local kind = redis.call('TYPE', KEYS[1]).ok
if kind ~= 'none' and kind ~= 'hash' then return {'corrupt', 'the record is a ' .. kind .. ', not a hash'} end
local r = redis.call('HMGET', KEYS[1], 'a', 's', 't', 'l', 'e', 'r')
if r[1] or r[2] or r[3] or r[4] or r[5] or r[6] then
  local a, s, t, l, e = r[1], r[2], r[3], finite(r[4]), finite(r[5])
  if e and e <= now then
    redis.call('DEL', KEYS[1])
  else
    local problem = record_problem(r, l, e)
    if problem then return {'corrupt', problem} end
    if a ~= hash then return {'mismatch'} end
    if s == 'd' then return {'done', r[6]} end
    if s == 'u' then return {'unknown', 'recorded'} end
    if s == 'p' and l > now then return {'in_flight'} end
    if s == 'p' then redis.call('HSET', KEYS[1], 's', 'x') end
    return {'unknown', 'lease_expired'}
  end
end
local token = tostring(redis.call('INCR', KEYS[2]))
redis.call('HSET', KEYS[1], 'a', hash, 's', 'p', 't', token, 'l', tostring(now + lease), 'e', tostring(now + lease + ttl))
redis.call('PEXPIRE', KEYS[1], lease + ttl)
return {'new', token}
`

/**
 * Idempotency `reclaim`. KEYS: record, fence counter. ARGV: now, argsHash, leaseMs, ttlMs. Takes over
 * a live, well-formed record of this arguments hash whose outcome is unknown (u, x, or p past its
 * lease): pending again under a new token from the fence counter, which fences out the old one.
 * Returns the token, or '' when the record is anything else (corrupt included) and nothing changed.
 */
export const RECLAIM_LUA = `${NOW}${FINITE}${RECORD_PROBLEM}
local now = now_ms(ARGV[1])
local hash, lease, ttl = ARGV[2], math.floor(tonumber(ARGV[3])), math.floor(tonumber(ARGV[4]))
if redis.call('TYPE', KEYS[1]).ok ~= 'hash' then return '' end
local r = redis.call('HMGET', KEYS[1], 'a', 's', 't', 'l', 'e', 'r')
local s, l, e = r[2], finite(r[4]), finite(r[5])
if record_problem(r, l, e) or e <= now or r[1] ~= hash then return '' end
if not (s == 'u' or s == 'x' or (s == 'p' and l <= now)) then return '' end
local token = tostring(redis.call('INCR', KEYS[2]))
redis.call('HSET', KEYS[1], 's', 'p', 't', token, 'l', tostring(now + lease), 'e', tostring(now + lease + ttl))
redis.call('PEXPIRE', KEYS[1], lease + ttl)
return token
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

/**
 * Breaker read. KEYS: state. ARGV: now. Returns the state JSON (or ''), its version, Redis's now,
 * and a problem ('' when none) when the key holds another Redis type than a hash.
 */
export const BREAKER_READ_LUA = `${NOW}
local now = tostring(now_ms(ARGV[1]))
local kind = redis.call('TYPE', KEYS[1]).ok
if kind ~= 'none' and kind ~= 'hash' then return {'', '0', now, 'the state is a ' .. kind .. ', not a hash'} end
local r = redis.call('HMGET', KEYS[1], 's', 'v')
return {r[1] or '', r[2] or '0', now, ''}
`

/** Breaker compare-and-set. KEYS: state. ARGV: expected version, state JSON, ttlMs. 1 when written. */
export const BREAKER_WRITE_LUA = `
local v = redis.call('HGET', KEYS[1], 'v') or '0'
if v ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 's', ARGV[2], 'v', tostring((tonumber(v) or 0) + 1))
redis.call('PEXPIRE', KEYS[1], math.floor(tonumber(ARGV[3])))
return 1
`

/**
 * Deletes a corrupt breaker state if nobody wrote it since it was read (same version), or any
 * value of another Redis type. KEYS: state. ARGV: version read. 1 when deleted.
 */
export const BREAKER_DISCARD_LUA = `
local kind = redis.call('TYPE', KEYS[1]).ok
if kind == 'hash' and (redis.call('HGET', KEYS[1], 'v') or '0') ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
return 1
`

// The bucket stores what was spent, so a missing key is a full bucket and nobody has to create it.
// A bucket that cannot be read (not a finite number >= 0, or another Redis type) is rewritten as
// empty, all of its capacity spent: retries wait for successes to refill it, as after a storm.
const SPENT = `
local function spent_of(key, capacity)
  local kind = redis.call('TYPE', key).ok
  if kind == 'none' then return 0, 0 end
  if kind == 'string' then
    local n = tonumber(redis.call('GET', key))
    if n and n == n and n >= 0 and n ~= math.huge then return n, 0 end
  end
  redis.call('DEL', key)
  redis.call('SET', key, tostring(capacity))
  return capacity, 1
end
`

/**
 * Retry budget take. KEYS: bucket. ARGV: capacity, tokens, refill (the worker's held refills, put back
 * first). Returns {taken 0|1, corrupt 0|1}; a take that finds the bucket corrupt is refused (fails
 * closed: no retry), and the refill it carried fills the rewritten bucket.
 */
export const BUDGET_TAKE_LUA = `${SPENT}
local capacity = tonumber(ARGV[1])
local spent, corrupt = spent_of(KEYS[1], capacity)
local refilled = math.max(0, spent - (tonumber(ARGV[3]) or 0))
if corrupt == 1 then
  redis.call('SET', KEYS[1], tostring(refilled))
  return {0, 1}
end
local cost = tonumber(ARGV[2])
if refilled + cost > capacity then
  if refilled ~= spent then redis.call('SET', KEYS[1], tostring(refilled)) end
  return {0, 0}
end
if refilled + cost ~= spent then redis.call('SET', KEYS[1], tostring(refilled + cost)) end
return {1, 0}
`

/** Retry budget refill. KEYS: bucket. ARGV: capacity, tokens. Returns {0, corrupt 0|1}. */
export const BUDGET_REFILL_LUA = `${SPENT}
local spent, corrupt = spent_of(KEYS[1], tonumber(ARGV[1]))
local left = spent - tonumber(ARGV[2])
if left <= 0 then redis.call('DEL', KEYS[1]) else redis.call('SET', KEYS[1], tostring(left)) end
return {0, corrupt}
`

/** Retry budget read, for `available()`. KEYS: bucket. Returns what was spent as text: '0' when missing, '' when not a string. */
export const BUDGET_READ_LUA = `
local kind = redis.call('TYPE', KEYS[1]).ok
if kind == 'none' then return '0' end
if kind ~= 'string' then return '' end
return redis.call('GET', KEYS[1])
`
