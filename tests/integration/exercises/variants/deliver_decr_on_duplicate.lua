-- flow_deliver, decrementing before the HSETNX guard: a duplicate answers 2
-- as it should, but the counter has already moved.
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
  local remaining = redis.call('DECR', KEYS[1])
  if redis.call('HSETNX', record, child_id, value) == 0 then
    return 2
  end
  if remaining <= 0 and redis.call('HGET', parent_row, 'state') == 'awaiting_children' then
    redis.call('ZADD', pending_key, 0, parent_id)
    redis.call('HSET', parent_row, 'state', 'pending')
  end
  return 1
end

if fail_parent(parent_row, KEYS[5], parent_id, child_id, value) == 0 then
  return 2
end
return 1
