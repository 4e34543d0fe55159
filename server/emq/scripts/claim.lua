-- claim: hand the lowest-scored pending job to a worker, under a lease.
-- KEYS[1] the queue's pending zset
-- KEYS[2] the queue's active zset (score = lease deadline, ms)
-- ARGV[1] the queue base, emq:{q}: (the row is base .. 'job:' .. id)
-- ARGV[2] the lease length in milliseconds
-- Returns: {id, token} where token is the new attempts count; nil when empty.
-- An id whose row is gone (a late completion retired it while it waited) is
-- dropped from pending on the way, never claimed: claiming it would make a
-- bare row with no parent and no payload.

-- @include now_ms

local base = ARGV[1]
local lease_ms = tonumber(ARGV[2])

local job_id, row
repeat
  local head = redis.call('ZPOPMIN', KEYS[1])
  if #head == 0 then
    return nil
  end
  job_id = head[1]
  row = base .. 'job:' .. job_id
until redis.call('EXISTS', row) == 1

-- the lease runs on the server clock, so every worker's is measured alike
redis.call('ZADD', KEYS[2], now_ms() + lease_ms, job_id)
redis.call('HSET', row, 'state', 'active')
-- the attempt number doubles as the fencing token complete/fail compare
local token = redis.call('HINCRBY', row, 'attempts', 1)
return {job_id, token}
