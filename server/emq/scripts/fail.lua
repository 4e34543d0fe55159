-- fail: record a failed attempt; retry later, or bury the job at the cap.
-- KEYS[1] the queue's active zset
-- KEYS[2] the job row
-- KEYS[3] the queue's schedule zset
-- KEYS[4] the queue's dead zset
-- KEYS[5..8] a same-queue flow child: the parent row, its :dependencies, its
--   :ignored, and the queue's pending zset (where 'id' releases the parent)
-- KEYS[5] a cross-queue child: this queue's flow:outbox list
-- ARGV[1] the job id
-- ARGV[2] the token
-- ARGV[3] the error text
-- ARGV[4] max_attempts (attempts in all; with 1 the first failure is final)
-- ARGV[5] backoff before the retry, ms
-- ARGV[6] the queue base, emq:{q}:
-- ARGV[7] (flow child) the parent id
-- ARGV[8] (flow child) the policy arm the host resolved: 'id' or 'fp'
-- ARGV[9] (cross-queue child) the parent's queue
-- Returns: 'scheduled' or 'dead'; 0 the row is gone.
-- Errors: EMQSTALE fail token mismatch; EMQARGS, EMQTYPE, EMQDATA
--   (includes/guards.lua), before any write.
-- The layout is the arm: 4 keys a flat job, 8 a same-queue child, 5 a cross-queue one.

-- @include leave_active
-- @include now_ms
-- @include release_parent
-- @include fail_parent
-- @include outbox_entry
-- @include guards

-- Every key the arm may write, and every number it computes with, checked first.
local refused
if #KEYS == 8 then
  refused = layout_refusal('fail', 8, 8, 8, 8)
    or types_refusal('fail', {KEYS[5], 'hash', 'KEYS[5]', KEYS[6], 'string', 'KEYS[6]',
                              KEYS[7], 'hash', 'KEYS[7]', KEYS[8], 'zset', 'KEYS[8]'})
    or stored_number_refusal('fail', redis.call('GET', KEYS[6]), "the parent's :dependencies")
elseif #KEYS == 5 then
  refused = layout_refusal('fail', 5, 5, 9, 9) or types_refusal('fail', {KEYS[5], 'list', 'KEYS[5]'})
else
  refused = layout_refusal('fail', 4, 4, 6, 9)
end
refused = refused or number_refusal('fail', 2) or number_refusal('fail', 4) or number_refusal('fail', 5)
  or types_refusal('fail', {KEYS[1], 'zset', 'KEYS[1]', KEYS[2], 'hash', 'KEYS[2]',
                            KEYS[3], 'zset', 'KEYS[3]', KEYS[4], 'zset', 'KEYS[4]'})
if refused then
  return refused
end

local job_id = ARGV[1]
local failure = ARGV[3]

local attempts, left_active, refusal = leave_active(KEYS[1], KEYS[2], job_id, ARGV[2], 'fail')
if refusal then
  return refusal
end

-- attempts left: park it in schedule until the backoff has passed
if tonumber(attempts) < tonumber(ARGV[4]) then
  redis.call('ZADD', KEYS[3], now_ms() + tonumber(ARGV[5]), job_id)
  redis.call('HSET', KEYS[2], 'state', 'scheduled', 'last_error', failure)
  return 'scheduled'
end

-- at the cap: the job dies
redis.call('ZADD', KEYS[4], now_ms(), job_id)
redis.call('HSET', KEYS[2], 'state', 'dead', 'last_error', failure)

-- The policy arm is applied here and only here. A death that did not come
-- out of active (a late duplicate) must not touch the parent a second time.
if left_active == 1 and #KEYS == 8 then
  local parent_id, parent_row = ARGV[7], KEYS[5]
  if ARGV[8] == 'id' then
    -- ignore the dependency: record the failure once, count it like a success
    if redis.call('HSETNX', KEYS[7], job_id, failure) == 1 then
      release_parent(KEYS[6], parent_row, KEYS[8], parent_id)
    end
  else
    fail_parent(parent_row, KEYS[4], parent_id, job_id, failure)
  end
elseif left_active == 1 and #KEYS == 5 then
  redis.call('RPUSH', KEYS[5],
    outbox_entry('failed', ARGV[6], job_id, failure, ARGV[7], ARGV[9], ARGV[8]))
end
return 'dead'
