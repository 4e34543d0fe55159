-- complete_early_release: the second exercise's wrong complete (redelivery.lua), raced on purpose.
-- KEYS[1] the queue's active zset
-- KEYS[2] the job row
-- KEYS[3..5] a same-queue flow child: the parent's :dependencies, :processed, and row
-- ARGV[1] the job id
-- ARGV[2] the token (the attempts value claim returned)
-- ARGV[3] the queue base, emq:{q}:
-- ARGV[4] the parent's bare id
-- ARGV[5] the result to record
-- Returns: 1 completed; 0 the row is gone.
-- Errors: EMQSTALE complete token mismatch.
-- The mistake: the decrement sits outside the was-active guard, so a late
-- completion of a child already handed back to pending counts it anyway.

-- @include leave_active

local job_id = ARGV[1]
local base = ARGV[3]

local _, left_active, refusal = leave_active(KEYS[1], KEYS[2], job_id, ARGV[2], 'complete')
if refusal then
  return refusal
end

if KEYS[3] then
  if left_active == 1 then
    redis.call('HSET', KEYS[4], job_id, ARGV[5])
  end
  -- counted whether or not this call took the child out of active
  local remaining = redis.call('DECR', KEYS[3])
  if remaining <= 0 and redis.call('HGET', KEYS[5], 'state') == 'awaiting_children' then
    redis.call('ZADD', base .. 'pending', 0, ARGV[4])
    redis.call('HSET', KEYS[5], 'state', 'pending')
  end
end

redis.call('DEL', KEYS[2])
redis.call('HINCRBY', base .. 'metrics:completed', 'count', 1)
return 1
