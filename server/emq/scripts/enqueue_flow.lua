-- enqueue_flow: land a whole same-queue flow in one atomic step on one slot.
-- KEYS[1] the parent row, emq:{q}:job:<parent>
-- KEYS[2] the parent's counter, emq:{q}:job:<parent>:dependencies
-- KEYS[3] the queue's pending zset, emq:{q}:pending
-- KEYS[4..] one row per child, in the order of the ARGV pairs
-- ARGV[1] the parent id
-- ARGV[2] the parent payload
-- ARGV[3] N, how many children follow
-- ARGV[4..] N pairs: child id, child payload
-- Returns: N, the counter the parent is held with.
-- Errors: EMQKIND job id must be JOB-namespaced (checked before any write);
--   EMQARGS when N does not match the KEYS and ARGV given, EMQTYPE
--   (includes/guards.lua), both before any write too.
-- Stepper: the body is cut into four moves; what precedes move 1 runs in each.

-- @include kind_refusal
-- @include guards

-- N is held to the KEYS and ARGV that carry the children before anything
-- counts on it: every loop below runs N times, and N rows are named.
local layout = layout_refusal('enqueue_flow', 3, math.huge, 3, math.huge)
  or count_refusal('enqueue_flow', 3, 3, 1, 3, 2)
if not layout then
  local roles = {KEYS[1], 'hash', 'KEYS[1]', KEYS[2], 'string', 'KEYS[2]', KEYS[3], 'zset', 'KEYS[3]'}
  for i = 4, #KEYS do
    table.insert(roles, KEYS[i])
    table.insert(roles, 'hash')
    table.insert(roles, 'KEYS[' .. i .. ']')
  end
  layout = types_refusal('enqueue_flow', roles)
end
if layout then
  return layout
end

local parent_id = ARGV[1]
local parent_payload = ARGV[2]
local n_children = tonumber(ARGV[3])
local pending_set = KEYS[3]

-- @move 1: gate every id
-- Check the parent and all children first: a refusal here leaves Valkey
-- exactly as it was, because nothing has been written yet.
local refused = kind_refusal(parent_id)
for i = 1, n_children do
  refused = refused or kind_refusal(ARGV[2 + 2 * i])
end
if refused then
  return refused
end

-- @move 2: land each child, claimable
-- Every child row names its parent, then joins pending: a worker may claim it
-- as soon as the script returns.
for i = 1, n_children do
  local child_row = KEYS[3 + i]
  local child_id = ARGV[2 + 2 * i]
  redis.call('HSET', child_row,
    'state', 'pending', 'attempts', '0',
    'payload', ARGV[3 + 2 * i], 'parent', parent_id)
  redis.call('ZADD', pending_set, 0, child_id)
end

-- @move 3: hold the parent
-- The parent row is written but joins no state set, so no claim can see it
-- until the fan-in moves it into pending.
redis.call('HSET', KEYS[1],
  'state', 'awaiting_children', 'attempts', '0', 'payload', parent_payload)

-- @move 4: set the counter
-- One outstanding child per child; the last completion brings it to zero.
redis.call('SET', KEYS[2], n_children)
return n_children
