-- admit: admit a sandbox's activity: register it live, unless it is new and a limit says no.
-- Site script (not EchoMQ's). One slot: the registry `lab:sandboxes` hashes as a
-- whole, and the two side keys carry `{lab:sandboxes}` as their hashtag.
--
-- KEYS[1] the registry (zset: sandbox -> last activity, ms)
-- KEYS[2] the never-used sandboxes (zset: sandbox -> last activity, ms)
-- KEYS[3] the counter of new sandboxes of this client address, this window
-- KEYS[4] every sandbox that may hold keys (zset: sandbox -> first admission, ms),
--         which the reaper reads instead of scanning for orphans
-- ARGV[1] sandbox  ARGV[2] now (ms)  ARGV[3] the site's cap
-- ARGV[4] new sandboxes one address may open per window (0: no limit)
-- ARGV[5] '1' when this is an action (the sandbox is used from now on)
-- ARGV[6] idle ms after which a never-used sandbox may be evicted when full
-- ARGV[7] the window's length (s), the counter's lifetime
-- Returns 1 admitted, 0 the site is full, -1 this address opened too many,
-- or the id of the never-used sandbox evicted to make room.
local now = tonumber(ARGV[2])
local known = redis.call('ZSCORE', KEYS[1], ARGV[1])
local answer = 1
if not known then
  local per_address = tonumber(ARGV[4])
  if per_address > 0 and tonumber(redis.call('GET', KEYS[3]) or '0') >= per_address then
    return -1
  end
  if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then
    local idle = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now - tonumber(ARGV[6]), 'LIMIT', 0, 1)
    if #idle == 0 then
      return 0
    end
    redis.call('ZREM', KEYS[1], idle[1])
    redis.call('ZREM', KEYS[2], idle[1])
    answer = idle[1]
  end
  if per_address > 0 then
    redis.call('INCR', KEYS[3])
    redis.call('EXPIRE', KEYS[3], tonumber(ARGV[7]))
  end
end
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('ZADD', KEYS[4], 'NX', now, ARGV[1])
if ARGV[5] == '1' then
  redis.call('ZREM', KEYS[2], ARGV[1])
elseif not known then
  redis.call('ZADD', KEYS[2], now, ARGV[1])
else
  redis.call('ZADD', KEYS[2], 'XX', now, ARGV[1])
end
return answer
