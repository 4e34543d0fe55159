-- complete: retire an active job; for a flow child, count it towards its parent.
-- KEYS[1] the queue's active zset
-- KEYS[2] the job row
-- KEYS[3..5] mode 'sq': the parent's :dependencies, :processed, and row
-- KEYS[3] mode 'xq': this queue's flow:outbox list
-- ARGV[1] the job id
-- ARGV[2] the token (the attempts value claim returned)
-- ARGV[3] the queue base, emq:{q}:
-- ARGV[4] mode: '' a flat job, 'sq' a same-queue flow child, 'xq' cross-queue
-- ARGV[5] (sq, xq) the parent id
-- ARGV[6] (sq, xq) the result to record
-- ARGV[7] (xq) the parent's queue
-- ARGV[8] (xq) the child's failure policy token, carried along in the entry
-- Returns: 1 completed; 0 the row is gone.
-- Errors: EMQSTALE complete token mismatch.

local job_id = ARGV[1]
local base = ARGV[3]
local mode = ARGV[4]

local attempts = redis.call('HGET', KEYS[2], 'attempts')
if not attempts then
  return 0
end
if attempts ~= ARGV[2] then
  return redis.error_reply('EMQSTALE complete token mismatch')
end

-- Only the call that takes the job out of active may count it: a redelivered
-- or late completion finds it already gone from active and skips the fan-in.
local left_active = redis.call('ZREM', KEYS[1], job_id)

if left_active == 1 and mode == 'sq' then
  local parent_id = ARGV[5]
  local parent_row = KEYS[5]
  local remaining = redis.call('DECR', KEYS[3])
  redis.call('HSET', KEYS[4], job_id, ARGV[6])
  -- a parent already failed by a sibling (fp) stays failed
  if remaining <= 0 and redis.call('HGET', parent_row, 'state') == 'awaiting_children' then
    redis.call('ZADD', base .. 'pending', 0, parent_id)
    redis.call('HSET', parent_row, 'state', 'pending')
  end
elseif left_active == 1 and mode == 'xq' then
  -- the parent lives on another slot: leave a durable note for the Pump
  local own_queue = string.match(base, '^emq:{(.*)}:$') or ''
  redis.call('RPUSH', KEYS[3], cjson.encode({
    kind = 'completed', child = job_id, child_queue = own_queue,
    value = ARGV[6], parent = ARGV[5], parent_queue = ARGV[7], policy = ARGV[8],
  }))
end

redis.call('DEL', KEYS[2])
redis.call('HINCRBY', base .. 'metrics:completed', 'count', 1)
return 1
