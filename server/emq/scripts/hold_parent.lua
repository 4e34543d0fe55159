-- hold_parent: write a flow parent held (awaiting_children) with its counter.
-- KEYS[1] the parent row
-- KEYS[2] the parent's :dependencies counter
-- ARGV[1] the parent id
-- ARGV[2] the parent payload
-- ARGV[3] N, how many direct children it waits for
-- ARGV[4] for a tree's inner node: its own parent's id, else ''
-- ARGV[5] for a tree's inner node: its parent's queue when different, else ''
-- Returns: 1 held now; 2 already held (a retry: the counter is kept as it is).
-- Errors: EMQKIND job id must be JOB-namespaced;
--   EMQSTATE flow parent exists and is not held;
--   EMQARGS, EMQTYPE (includes/guards.lua). All before any write.

-- @include kind_refusal
-- @include parent_link
-- @include guards

local parent_id = ARGV[1]
local refused = layout_refusal('hold_parent', 2, 2, 3, 5) or number_refusal('hold_parent', 3)
  or types_refusal('hold_parent', {KEYS[1], 'hash', 'KEYS[1]', KEYS[2], 'string', 'KEYS[2]'})
  or kind_refusal(parent_id)
if refused then
  return refused
end

if redis.call('EXISTS', KEYS[1]) == 1 then
  -- A retry by the same id: children may have been counted since, so the
  -- counter must not be reset.
  if redis.call('HGET', KEYS[1], 'state') == 'awaiting_children' then
    return 2
  end
  return redis.error_reply('EMQSTATE flow parent exists and is not held')
end

local fields = {'state', 'awaiting_children', 'attempts', '0', 'payload', ARGV[2]}
-- held: in no state set, so nothing can claim it before the fan-in releases it
redis.call('HSET', KEYS[1], unpack(parent_link(fields, ARGV[4] or '', ARGV[5] or '')))
redis.call('SET', KEYS[2], ARGV[3])
return 1
