-- @include leave_active
-- @include outbox_entry

local job_id = ARGV[1]
local base = ARGV[3]

-- the token fence: 0 for a missing row, EMQSTALE for an old token; left_active
-- is 1 only for the call that took the job out of active
local _, left_active, refusal = leave_active(KEYS[1], KEYS[2], job_id, ARGV[2], 'complete')
if refusal then
  return refusal
end

if left_active == 1 and ARGV[6] == 'xq' then
  -- a cross-queue child: its parent lives on another slot, so leave a note for the Pump
  redis.call('RPUSH', KEYS[3],
    outbox_entry('completed', base, job_id, ARGV[5], ARGV[4], ARGV[7], ARGV[8]))
elseif KEYS[3] then
  -- YOUR PART: the fan-in of a same-queue child.
  --   KEYS[3] the parent's :dependencies   KEYS[4] its :processed   KEYS[5] its row
  --   ARGV[4] the parent's id              ARGV[5] the result       base .. 'pending'
  -- Count the child only in the call that took it out of active: record its
  -- result in :processed, take one off :dependencies, and at zero release the
  -- parent (into pending, with state pending), once, and only while it is held.
end

-- the shared tail: the row retires and the metric counts
redis.call('DEL', KEYS[2])
redis.call('HINCRBY', base .. 'metrics:completed', 'count', 1)
return 1
