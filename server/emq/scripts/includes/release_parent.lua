-- release_parent: count one child off a held parent; at zero it becomes claimable.
-- Only a parent still held (awaiting_children) is released: one already failed
-- by a sibling under 'fp' stays failed. Returns the children still outstanding.
local function release_parent(dependencies_key, parent_row, pending_key, parent_id)
  local remaining = redis.call('DECR', dependencies_key)
  if remaining <= 0 and redis.call('HGET', parent_row, 'state') == 'awaiting_children' then
    redis.call('ZADD', pending_key, 0, parent_id)
    redis.call('HSET', parent_row, 'state', 'pending')
  end
  return remaining
end
