-- unregister_if_idle: forget a sandbox only if it is still as idle as when picked.
-- KEYS[1] the registry of live sandboxes, a zset (score = last seen, ms)
-- ARGV[1] the sandbox id
-- ARGV[2] the cutoff, in ms: seen at or before it means idle
-- Returns: 1 removed from the registry; 0 kept (gone already, or seen since).
-- A visitor who came back between the reaper's read and this call keeps
-- their sandbox: the check and the ZREM are one step.

local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if score and tonumber(score) <= tonumber(ARGV[2]) then
  redis.call('ZREM', KEYS[1], ARGV[1])
  return 1
end
return 0
