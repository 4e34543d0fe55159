-- claim: hand the lowest-scored pending job to a worker, under a lease.
-- KEYS[1] the queue's pending zset
-- KEYS[2] the queue's active zset (score = lease deadline, ms)
-- ARGV[1] the queue base, emq:{q}: (the row is base .. 'job:' .. id)
-- ARGV[2] the lease length in milliseconds
-- Returns: {id, token} where token is the new attempts count; nil when empty.
-- Errors: EMQARGS, EMQTYPE, EMQDATA (includes/guards.lua), before any write.
-- An id whose row is gone (a late completion retired it while it waited) is
-- dropped from pending on the way, never claimed: claiming it would make a
-- bare row with no parent and no payload.

-- @include now_ms
-- @include guards

local refused = layout_refusal('claim', 2, 2, 2, 2) or number_refusal('claim', 2)
  or types_refusal('claim', {KEYS[1], 'zset', 'KEYS[1]', KEYS[2], 'zset', 'KEYS[2]'})
if refused then
  return refused
end
local base = ARGV[1]
local lease_ms = tonumber(ARGV[2])

-- Read before writing: find the first id with a row (a read per member, at
-- most the set's size), so a row that cannot be claimed is refused whole.
local waiting = redis.call('ZCARD', KEYS[1])
local rank, job_id, row = 0, nil, nil
while rank < waiting do
  local id = redis.call('ZRANGE', KEYS[1], rank, rank)[1]
  if redis.call('EXISTS', base .. 'job:' .. id) == 1 then
    job_id, row = id, base .. 'job:' .. id
    break
  end
  rank = rank + 1
end
if not job_id then
  if waiting > 0 then
    redis.call('ZPOPMIN', KEYS[1], waiting)  -- every id was a retired row's
  end
  return nil
end
refused = type_refusal('claim', row, 'hash', 'the job row')
  or stored_number_refusal('claim', redis.call('HGET', row, 'attempts'), "the job row's attempts")
if refused then
  return refused
end

-- the rows passed over, and the claimed id, leave pending together
redis.call('ZPOPMIN', KEYS[1], rank + 1)
-- the lease runs on the server clock, so every worker's is measured alike
redis.call('ZADD', KEYS[2], now_ms() + lease_ms, job_id)
redis.call('HSET', row, 'state', 'active')
-- the attempt number doubles as the fencing token complete/fail compare
local token = redis.call('HINCRBY', row, 'attempts', 1)
return {job_id, token}
