-- flow_deliver, releasing whenever the counter reads zero: guarded against
-- counting twice, but a repeated last entry releases the parent a second time,
-- even after a worker claimed it.
-- @include fail_parent

local child_id = ARGV[1]
local value = ARGV[2]
local parent_id = ARGV[3]
local parent_row = KEYS[3]
local pending_key = ARGV[4] .. 'pending'

if redis.call('EXISTS', parent_row) == 0 then
  return 0
end

if ARGV[5] == 'completed' or ARGV[6] == 'id' then
  local record = ARGV[5] == 'completed' and KEYS[2] or KEYS[4]
  local fresh = redis.call('HSETNX', record, child_id, value)
  if fresh == 1 then
    redis.call('DECR', KEYS[1])
  end
  if tonumber(redis.call('GET', KEYS[1])) <= 0 then
    redis.call('ZADD', pending_key, 0, parent_id)
    redis.call('HSET', parent_row, 'state', 'pending')
  end
  return fresh == 1 and 1 or 2
end

if fail_parent(parent_row, KEYS[5], parent_id, child_id, value) == 0 then
  return 2
end
return 1
