-- flow_deliver, recording with HSET where the guard needs HSETNX: a second
-- delivery of the same entry overwrites the record and counts the child again.
-- @include release_parent
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
  redis.call('HSET', record, child_id, value)
  release_parent(KEYS[1], parent_row, pending_key, parent_id)
  return 1
end

if fail_parent(parent_row, KEYS[5], parent_id, child_id, value) == 0 then
  return 2
end
return 1
