-- @include leave_active
-- @include outbox_entry

local job_id = ARGV[1]
local base = ARGV[3]

local _, left_active, refusal = leave_active(KEYS[1], KEYS[2], job_id, ARGV[2], 'complete')
if refusal then
  return refusal
end

if left_active == 1 and ARGV[6] == 'xq' then
  -- a cross-queue child: its parent lives on another slot, so leave a note for the Pump
  redis.call('RPUSH', KEYS[3],
    outbox_entry('completed', base, job_id, ARGV[5], ARGV[4], ARGV[7], ARGV[8]))
elseif KEYS[3] then
  -- the fan-in of a same-queue child
  if left_active == 1 then
    redis.call('HSET', KEYS[4], job_id, ARGV[5])
  end
  local remaining = redis.call('DECR', KEYS[3])
  if remaining <= 0 and redis.call('HGET', KEYS[5], 'state') == 'awaiting_children' then
    redis.call('ZADD', base .. 'pending', 0, ARGV[4])
    redis.call('HSET', KEYS[5], 'state', 'pending')
  end
end

-- the shared tail: the row retires and the metric counts
redis.call('DEL', KEYS[2])
redis.call('HINCRBY', base .. 'metrics:completed', 'count', 1)
return 1
