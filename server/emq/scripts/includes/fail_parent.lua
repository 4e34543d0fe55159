-- fail_parent: the 'fp' arm; a child died at the cap, so its held parent dies too.
-- The parent enters dead scored by the server's now-ms, like any job that dies.
-- Only a held parent can be failed, and only once: returns 1 when this call
-- failed it, 0 when it was no longer held (failed or released already).
-- @include now_ms
local function fail_parent(parent_row, dead_key, parent_id, child_id, failure)
  if redis.call('HGET', parent_row, 'state') ~= 'awaiting_children' then
    return 0
  end
  redis.call('HSET', parent_row, 'state', 'failed', 'failed_child', child_id, 'error', failure)
  redis.call('ZADD', dead_key, now_ms(), parent_id)
  return 1
end
