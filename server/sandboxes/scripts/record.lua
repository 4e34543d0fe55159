-- record: what one action did to the learner's record, and their activity.
-- Site script (not EchoMQ's). One slot: both keys carry the sandbox's hashtag.
-- KEYS[1] the sandbox's activity record, lab:{s}:meta
-- KEYS[2] the learner's progress record, lab:{s}:progress
-- ARGV[1] both records' lifetime, s (an idle sandbox's go with it)
-- ARGV[2] now, ms
-- ARGV[3] the widget acted on (or the exercise run, 'ex:<name>')
-- ARGV[4] 1 when a prediction was answered, else 0
-- ARGV[5] 1 when Valkey bore it out, else 0
-- ARGV[6] the verdict in words ('' none)
-- ARGV[7] an exercise's result 'passed/total' ('' none): kept when it beats the best
-- ARGV[8..] the tour milestones the action reached
-- Returns: the whole progress record, flat (field, value, ...): the page's
--   progress line is drawn from it.
local widget = ARGV[3]
-- @include fresh_record
redis.call('HSET', KEYS[1], 'seen', ARGV[2], 'widget', widget)
for i = 8, #ARGV do
  redis.call('HSET', KEYS[2], 'm:' .. widget .. ':' .. ARGV[i], '1')
end
if ARGV[4] == '1' then
  redis.call('HINCRBY', KEYS[2], 'asked:' .. widget, 1)
  redis.call('HINCRBY', KEYS[2], 'right:' .. widget, tonumber(ARGV[5]))
  redis.call('HSET', KEYS[2], 'verdict:' .. widget, ARGV[6])
end
if ARGV[7] ~= '' then
  local passed, total = string.match(ARGV[7], '^(%d+)/(%d+)$')
  local best = redis.call('HGET', KEYS[2], widget)
  local before = best and tonumber(string.match(best, '^(%d+)/')) or -1
  if passed and tonumber(passed) > before then
    redis.call('HSET', KEYS[2], widget, ARGV[7])
  end
end
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[1]))
redis.call('EXPIRE', KEYS[2], tonumber(ARGV[1]))
return redis.call('HGETALL', KEYS[2])
