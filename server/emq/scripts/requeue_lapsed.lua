-- requeue_lapsed: hand every job whose lease has run out back to pending.
-- KEYS[1] the queue's active zset (score = lease deadline, ms)
-- KEYS[2] the queue's pending zset
-- ARGV[1] the queue base, emq:{q}: (the row is base .. 'job:' .. id)
-- ARGV[2] the most jobs to requeue in one call
-- Returns: the ids requeued, oldest deadline first (an empty list when none lapsed).
-- Errors: EMQARGS, EMQTYPE (includes/guards.lua), before any write.
-- The token is left as it is: the next claim raises it, and from then on the
-- first worker's completion carries an old token and answers EMQSTALE.

-- @include now_ms
-- @include guards

local refused = layout_refusal('requeue_lapsed', 2, 2, 2, 2) or number_refusal('requeue_lapsed', 2)
  or types_refusal('requeue_lapsed', {KEYS[1], 'zset', 'KEYS[1]', KEYS[2], 'zset', 'KEYS[2]'})
if refused then
  return refused
end
local base = ARGV[1]
local limit = tonumber(ARGV[2])

-- the server clock, the same one claim measured the deadline with
local lapsed = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now_ms(), 'LIMIT', 0, limit)
-- every row it would touch is checked before the first write
for _, job_id in ipairs(lapsed) do
  local row = base .. 'job:' .. job_id
  refused = refused or (redis.call('EXISTS', row) == 1 and type_refusal('requeue_lapsed', row, 'hash', 'a job row'))
end
if refused then
  return refused
end
for _, job_id in ipairs(lapsed) do
  redis.call('ZREM', KEYS[1], job_id)
  local row = base .. 'job:' .. job_id
  -- a row retired meanwhile stays retired: only a live job goes back
  if redis.call('EXISTS', row) == 1 then
    redis.call('ZADD', KEYS[2], 0, job_id)
    redis.call('HSET', row, 'state', 'pending')
  end
end
return lapsed
