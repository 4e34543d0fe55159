-- attempt: count one failed-attempt try (a token or class code compared) in a sliding window.
-- Site script (not EchoMQ's). One key: each budget (a visitor, an address) is its own.
-- KEYS[1] lab:attempts:<kind>:<whose> (zset: one member per attempt, scored by its time, ms)
-- ARGV[1] now, ms  ARGV[2] the window, ms  ARGV[3] this attempt's member (unique)
-- ARGV[4] the budget's limit (0: none)
-- Returns: the attempts in the window with this one. Past the limit this one is NOT added:
--   any window holds at most `limit` compared attempts, and a flood keeps the set small.
local now, window, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local count = redis.call('ZCARD', KEYS[1]) + 1
if limit > 0 and count > limit then
  return count
end
redis.call('ZADD', KEYS[1], now, ARGV[3])
redis.call('PEXPIRE', KEYS[1], window)
return count
