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
  -- YOUR PART: a completion (value is its result; it goes in KEYS[2], :processed)
  -- or a failure whose policy ignores the dependency (value is the error; it
  -- goes in KEYS[4], :ignored). Record it, take one off KEYS[1] (:dependencies)
  -- and at zero release the parent: into pending_key, with state pending.
  -- The Pump delivers an entry again after a crash before trim: a second
  -- delivery of the same entry must change nothing and answer 2.
  return 1
end

-- the failure branch: fail the parent (fp, and any token we do not know); a
-- parent no longer held was failed or released already, so nothing changes
if fail_parent(parent_row, KEYS[5], parent_id, child_id, value) == 0 then
  return 2
end
return 1
