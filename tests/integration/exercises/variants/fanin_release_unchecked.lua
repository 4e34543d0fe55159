-- complete, counting each child once but releasing the parent at zero without
-- looking at its state: a parent failed or claimed meanwhile is put in pending again.
-- @include leave_active
-- @include outbox_entry

local job_id = ARGV[1]
local base = ARGV[3]

local _, left_active, refusal = leave_active(KEYS[1], KEYS[2], job_id, ARGV[2], 'complete')
if refusal then
  return refusal
end

if left_active == 1 and ARGV[6] == 'xq' then
  redis.call('RPUSH', KEYS[3],
    outbox_entry('completed', base, job_id, ARGV[5], ARGV[4], ARGV[7], ARGV[8]))
elseif left_active == 1 and KEYS[3] then
  redis.call('HSET', KEYS[4], job_id, ARGV[5])
  if redis.call('DECR', KEYS[3]) <= 0 then
    redis.call('ZADD', base .. 'pending', 0, ARGV[4])
    redis.call('HSET', KEYS[5], 'state', 'pending')
  end
end

redis.call('DEL', KEYS[2])
redis.call('HINCRBY', base .. 'metrics:completed', 'count', 1)
return 1
