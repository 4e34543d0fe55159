-- enqueue_flow_child: land one child of a held parent, on the child's own slot.
-- KEYS[1] the child row
-- KEYS[2] the child queue's pending zset
-- ARGV[1] the child id
-- ARGV[2] the child payload
-- ARGV[3] the parent id
-- ARGV[4] the parent's queue, or '' when the child shares the parent's queue
-- Returns: 1 landed; 2 the row already exists (left untouched).
-- Errors: EMQKIND job id must be JOB-namespaced; EMQARGS, EMQTYPE
--   (includes/guards.lua). All before any write.

-- @include kind_refusal
-- @include parent_link
-- @include guards

local child_id = ARGV[1]
local refused = layout_refusal('enqueue_flow_child', 2, 2, 4, 4)
  or types_refusal('enqueue_flow_child', {KEYS[1], 'hash', 'KEYS[1]', KEYS[2], 'zset', 'KEYS[2]'})
  or kind_refusal(child_id)
if refused then
  return refused
end

-- landed by an earlier attempt of the same add: leave it as it is
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 2
end

-- parent_queue set marks the outbox path: this child's completion is
-- delivered to the other slot by the Pump; '' and completion counts it directly
redis.call('HSET', KEYS[1],
  unpack(parent_link({'state', 'pending', 'attempts', '0', 'payload', ARGV[2]}, ARGV[3], ARGV[4])))
redis.call('ZADD', KEYS[2], 0, child_id)
return 1
