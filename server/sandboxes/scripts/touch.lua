-- touch: a sandbox was used just now: refresh its place in the registry.
-- Site script (not EchoMQ's). One slot: the registry `lab:sandboxes` and the
-- never-used set `lab:{lab:sandboxes}:unused` (admit.lua) share it.
-- KEYS[1] the registry (zset: sandbox -> last activity, ms)
-- KEYS[2] the never-used sandboxes (zset)
-- ARGV[1] sandbox  ARGV[2] now (ms)
-- Returns: 1 when the sandbox is registered (refreshed), 0 when it is not
--   (the reaper removed it, or it was never admitted: nothing is added here).
redis.call('ZREM', KEYS[2], ARGV[1])
-- ZSCORE first, not ZADD XX CH alone: CH answers 0 for a touch in the same
-- millisecond as the last, and the commands a touch sends stay the same
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return 0
end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
return 1
