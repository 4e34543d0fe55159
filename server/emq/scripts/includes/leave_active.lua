-- leave_active: the fence every finishing transition passes first.
-- The token is the attempts value claim handed out: a worker whose lease was
-- taken over holds an older one and is refused (EMQSTALE <verb> token mismatch).
-- Returns attempts, left_active, refusal: refusal is the reply to give back at
-- once (0 for a missing row, the EMQSTALE error) and nil when the fence passed;
-- left_active is 1 only for the call that took the job out of active, so a
-- redelivered or late duplicate can tell it must not count the job again.
local function leave_active(active_key, row_key, job_id, token, verb)
  local attempts = redis.call('HGET', row_key, 'attempts')
  if not attempts then
    return nil, 0, 0
  end
  if attempts ~= token then
    return attempts, 0, redis.error_reply('EMQSTALE ' .. verb .. ' token mismatch')
  end
  return attempts, redis.call('ZREM', active_key, job_id), nil
end
