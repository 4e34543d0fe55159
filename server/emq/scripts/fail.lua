-- fail: record a failed attempt; retry later, or bury the job at the cap.
-- KEYS[1] the queue's active zset
-- KEYS[2] the job row
-- KEYS[3] the queue's schedule zset
-- KEYS[4] the queue's dead zset
-- KEYS[5..7] mode 'sq': the parent row, its :dependencies, its :ignored
-- KEYS[5] mode 'xq': this queue's flow:outbox list
-- ARGV[1] the job id
-- ARGV[2] the token
-- ARGV[3] the error text
-- ARGV[4] max_attempts (attempts in all; with 1 the first failure is final)
-- ARGV[5] backoff before the retry, ms
-- ARGV[6] the queue base, emq:{q}:
-- ARGV[7] mode: '' flat, 'sq' same-queue flow child, 'xq' cross-queue child
-- ARGV[8] (sq, xq) the parent id
-- ARGV[9] (sq, xq) the policy token: 'id' ignore the dependency, else 'fp'
-- ARGV[10] (xq) the parent's queue
-- Returns: 'scheduled' or 'dead'; 0 the row is gone.
-- Errors: EMQSTALE fail token mismatch.

local job_id = ARGV[1]
local failure = ARGV[3]
local base = ARGV[6]
local mode = ARGV[7]

local attempts = redis.call('HGET', KEYS[2], 'attempts')
if not attempts then
  return 0
end
if attempts ~= ARGV[2] then
  return redis.error_reply('EMQSTALE fail token mismatch')
end

local left_active = redis.call('ZREM', KEYS[1], job_id)
local clock = redis.call('TIME')
local now_ms = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)

-- attempts left: park it in schedule until the backoff has passed
if tonumber(attempts) < tonumber(ARGV[4]) then
  redis.call('ZADD', KEYS[3], now_ms + tonumber(ARGV[5]), job_id)
  redis.call('HSET', KEYS[2], 'state', 'scheduled', 'last_error', failure)
  return 'scheduled'
end

-- at the cap: the job dies
redis.call('ZADD', KEYS[4], now_ms, job_id)
redis.call('HSET', KEYS[2], 'state', 'dead', 'last_error', failure)

-- The policy is consulted here and only here. A death that did not come out
-- of active (a late duplicate) must not touch the parent a second time.
if left_active == 1 then
  local parent_id = ARGV[8]
  local policy = ARGV[9]
  if policy ~= 'id' then
    policy = 'fp'
  end
  if mode == 'sq' then
    local parent_row = KEYS[5]
    local parent_state = redis.call('HGET', parent_row, 'state')
    if policy == 'id' then
      if redis.call('HSETNX', KEYS[7], job_id, failure) == 1 then
        local remaining = redis.call('DECR', KEYS[6])
        if remaining <= 0 and parent_state == 'awaiting_children' then
          redis.call('ZADD', base .. 'pending', 0, parent_id)
          redis.call('HSET', parent_row, 'state', 'pending')
        end
      end
    elseif parent_state == 'awaiting_children' then
      redis.call('HSET', parent_row, 'state', 'failed', 'failed_child', job_id, 'error', failure)
      redis.call('ZADD', KEYS[4], now_ms, parent_id)
    end
  elseif mode == 'xq' then
    local own_queue = string.match(base, '^emq:{(.*)}:$') or ''
    redis.call('RPUSH', KEYS[5], cjson.encode({
      kind = 'failed', child = job_id, child_queue = own_queue,
      value = failure, parent = parent_id, parent_queue = ARGV[10], policy = policy,
    }))
  end
end
return 'dead'
