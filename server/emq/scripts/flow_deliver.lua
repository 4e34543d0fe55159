-- flow_deliver: apply one outbox entry on the PARENT's slot (the Pump's half).
-- KEYS[1] the parent's :dependencies counter
-- KEYS[2] the parent's :processed hash
-- KEYS[3] the parent row
-- KEYS[4] the parent's :ignored hash
-- KEYS[5] the parent queue's dead zset
-- ARGV[1] the child id
-- ARGV[2] the value: the child's result, or its error for a failure
-- ARGV[3] the parent id
-- ARGV[4] the parent queue's base, emq:{pq}:
-- ARGV[5] kind: 'completed' or 'failed'
-- ARGV[6] the child's policy: 'id' ignore the dependency, else fail the parent
-- Returns: 1 applied; 2 a duplicate the guard refused (nothing changed);
--   0 the parent row does not exist (undeliverable: the entry blocks).

-- @include release_parent
-- @include fail_parent

local child_id = ARGV[1]
local value = ARGV[2]
local parent_id = ARGV[3]
local parent_row = KEYS[3]
local pending_key = ARGV[4] .. 'pending'

if redis.call('EXISTS', parent_row) == 0 then
  return 0
end

if ARGV[5] == 'completed' or ARGV[6] == 'id' then
  -- a result goes in :processed; a failure whose policy ignores the dependency
  -- ('id') in :ignored, and counts like a success. HSETNX is the idempotence
  -- guard: a re-delivered entry finds its child already recorded and changes nothing
  local record = ARGV[5] == 'completed' and KEYS[2] or KEYS[4]
  if redis.call('HSETNX', record, child_id, value) == 0 then
    return 2
  end
  release_parent(KEYS[1], parent_row, pending_key, parent_id)
  return 1
end

-- fail the parent (fp, and any token we do not know): a parent no longer
-- held has been failed or released already, so the entry changes nothing
if fail_parent(parent_row, KEYS[5], parent_id, child_id, value) == 0 then
  return 2
end
return 1
