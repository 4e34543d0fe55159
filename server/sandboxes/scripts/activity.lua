-- activity: count one action against its budgets and record the sandbox's activity.
-- Site script (not EchoMQ's). One slot: every key carries the sandbox's
-- hashtag, {<sandbox>}; a budget of another slot (an address, a room) is
-- counted by `count.lua` in the same round trip.
-- KEYS[1] the sandbox's meta hash, lab:{s}:meta (widget, page, seen)
-- KEYS[2] the learner's progress hash, lab:{s}:progress (read, its expiry renewed)
-- KEYS[3..] this sandbox's rate counters for the current window
-- ARGV[1] the meta's and the progress's lifetime, s
-- ARGV[2] a rate counter's lifetime, s
-- ARGV[3] the number of progress fields to read, n
-- ARGV[4..3+n] those fields
-- ARGV[4+n..] meta field, value pairs
-- Returns: { counts, progress } — each counter after this action, and the
--   progress fields in the order asked (false where absent).

local n = tonumber(ARGV[3])
local fields = {}
for i = 4, 3 + n do
  fields[#fields + 1] = ARGV[i]
end
local meta = {}
for i = 4 + n, #ARGV do
  meta[#meta + 1] = ARGV[i]
end
if #meta > 0 then
  redis.call('HSET', KEYS[1], unpack(meta))
end
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[1]))
redis.call('EXPIRE', KEYS[2], tonumber(ARGV[1]))
local counts = {}
for i = 3, #KEYS do
  local count = redis.call('INCR', KEYS[i])
  if count == 1 then
    redis.call('EXPIRE', KEYS[i], tonumber(ARGV[2]))
  end
  counts[#counts + 1] = count
end
local read = {}
if n > 0 then
  read = redis.call('HMGET', KEYS[2], unpack(fields))
end
return { counts, read }
