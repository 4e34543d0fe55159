-- admit: register a sandbox as live, unless it is new and the site is full.
-- KEYS[1] the registry of live sandboxes, a zset (score = last seen, ms)
-- ARGV[1] the sandbox id
-- ARGV[2] now, in ms (the score it is registered with)
-- ARGV[3] the cap: how many sandboxes may be live at once
-- Returns: 1 admitted (new, or already live and seen again); 0 the site is full.
-- One script, so two new visitors cannot both take the last place.

local known = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not known and redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then
  return 0
end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
return 1
