-- fresh_record: an activity record (KEYS[1], lab:{s}:meta) of another type than a hash (an
-- operator's command, a fault: no learner reaches it) would refuse every write to it, so it
-- starts again here. It is the site's bookkeeping: a class member's name goes with it (the
-- roster says "(no name)" until they join again). learners.py keeps the same rule for its writes.
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind ~= 'hash' and kind ~= 'none' then
  redis.call('DEL', KEYS[1])
end
