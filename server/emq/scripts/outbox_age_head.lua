-- outbox_age_head: count how long one entry has blocked the outbox head.
-- KEYS[1] the flow:outbox list
-- KEYS[2] the head-counter hash (fields entry, count)
-- KEYS[3] the poison list the entry is moved to past the bound
-- ARGV[1] the blocked entry, exactly as read
-- ARGV[2] max_blocked: how many ticks it may block before it is moved aside
-- Returns: 0 the head is no longer that entry (nothing counted);
--   1 counted, still blocking; 2 moved to the poison list.

local blocked = ARGV[1]
if redis.call('LINDEX', KEYS[1], 0) ~= blocked then
  return 0
end

local seen
if redis.call('HGET', KEYS[2], 'entry') == blocked then
  seen = redis.call('HINCRBY', KEYS[2], 'count', 1)
else
  -- a different head blocks now: its count starts over
  redis.call('HSET', KEYS[2], 'entry', blocked, 'count', 1)
  seen = 1
end

if seen > tonumber(ARGV[2]) then
  redis.call('LPOP', KEYS[1])
  redis.call('RPUSH', KEYS[3], blocked)
  redis.call('DEL', KEYS[2])
  return 2
end
return 1
