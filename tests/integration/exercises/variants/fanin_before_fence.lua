-- complete, counting the child before the token fence: a stale or repeated
-- completion counts it again before the fence refuses it.
-- @include leave_active
-- @include release_parent
-- @include outbox_entry

local job_id = ARGV[1]
local base = ARGV[3]

if KEYS[3] and ARGV[6] ~= 'xq' then
  redis.call('HSET', KEYS[4], job_id, ARGV[5])
  release_parent(KEYS[3], KEYS[5], base .. 'pending', ARGV[4])
end

local _, left_active, refusal = leave_active(KEYS[1], KEYS[2], job_id, ARGV[2], 'complete')
if refusal then
  return refusal
end

if left_active == 1 and ARGV[6] == 'xq' then
  redis.call('RPUSH', KEYS[3],
    outbox_entry('completed', base, job_id, ARGV[5], ARGV[4], ARGV[7], ARGV[8]))
end

redis.call('DEL', KEYS[2])
redis.call('HINCRBY', base .. 'metrics:completed', 'count', 1)
return 1
