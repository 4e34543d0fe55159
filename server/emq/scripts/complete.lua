-- complete: retire an active job; for a flow child, count it towards its parent.
-- KEYS[1] the queue's active zset
-- KEYS[2] the job row
-- KEYS[3..5] a same-queue flow child: the parent's :dependencies, :processed, and row
-- KEYS[3] a cross-queue child (ARGV[6] = 'xq'): this queue's flow:outbox list
-- ARGV[1] the job id
-- ARGV[2] the token (the attempts value claim returned)
-- ARGV[3] the queue base, emq:{q}:
-- ARGV[4] (flow child) the parent's bare id
-- ARGV[5] (flow child) the result to record
-- ARGV[6] 'xq' for a cross-queue child; absent otherwise
-- ARGV[7] (xq) the parent's queue
-- ARGV[8] (xq) the child's failure policy token, carried along in the entry
-- Returns: 1 completed; 0 the row is gone.
-- Errors: EMQSTALE complete token mismatch; EMQARGS, EMQTYPE, EMQDATA
--   (includes/guards.lua), before any write.
-- A flat job passes KEYS[1..2] and ARGV[1..3] only.

-- @include leave_active
-- @include release_parent
-- @include outbox_entry
-- @include guards

-- The layout is the arm: 2 keys a flat job, 5 a same-queue child, 3 with
-- ARGV[6] = 'xq' a cross-queue one. Every key it may write is checked first.
local cross = ARGV[6] == 'xq'
local refused
if cross then
  refused = layout_refusal('complete', 3, 3, 8, 8)
    or types_refusal('complete', {KEYS[3], 'list', 'KEYS[3]'})
elseif #KEYS == 5 then
  refused = layout_refusal('complete', 5, 5, 5, 6)
    or types_refusal('complete', {KEYS[3], 'string', 'KEYS[3]', KEYS[4], 'hash', 'KEYS[4]',
                                  KEYS[5], 'hash', 'KEYS[5]', ARGV[3] .. 'pending', 'zset', 'the pending set'})
    or stored_number_refusal('complete', redis.call('GET', KEYS[3]), "the parent's :dependencies")
else
  refused = layout_refusal('complete', 2, 2, 3, 5)
end
refused = refused or types_refusal('complete', {KEYS[1], 'zset', 'KEYS[1]', KEYS[2], 'hash', 'KEYS[2]',
                                                 ARGV[3] .. 'metrics:completed', 'hash', 'the metrics hash'})
  or stored_number_refusal('complete', redis.call('HGET', ARGV[3] .. 'metrics:completed', 'count'),
                           'the completed count')
if refused then
  return refused
end

local job_id = ARGV[1]
local base = ARGV[3]

local _, left_active, refusal = leave_active(KEYS[1], KEYS[2], job_id, ARGV[2], 'complete')
if refusal then
  return refusal
end

-- Only the call that took the job out of active counts it: a redelivered or
-- late completion finds it gone from active and skips the fan-in.
if left_active == 1 and ARGV[6] == 'xq' then
  -- the parent lives on another slot: leave a durable note for the Pump
  redis.call('RPUSH', KEYS[3],
    outbox_entry('completed', base, job_id, ARGV[5], ARGV[4], ARGV[7], ARGV[8]))
elseif left_active == 1 and KEYS[3] then
  -- the fan-in: record the result, then count the child off its parent
  redis.call('HSET', KEYS[4], job_id, ARGV[5])
  release_parent(KEYS[3], KEYS[5], base .. 'pending', ARGV[4])
end

-- the shared tail: the row retires and the metric counts
redis.call('DEL', KEYS[2])
redis.call('HINCRBY', base .. 'metrics:completed', 'count', 1)
return 1
