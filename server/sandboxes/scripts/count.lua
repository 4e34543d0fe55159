-- count: one INCR of a fixed-window counter, its expiry set when the window opens.
-- Site script (not EchoMQ's). One key, so one slot.
-- KEYS[1] the counter, lab:{<who>}:rate:<window>
-- ARGV[1] its lifetime, s
-- Returns: the count after this one.

local count = redis.call('INCR', KEYS[1])
if count == 1 then
  redis.call('EXPIRE', KEYS[1], tonumber(ARGV[1]))
end
return count
