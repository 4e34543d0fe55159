-- answer: one class member's judged answer, kept on the class; the class page is told.
-- Site script (not EchoMQ's). One key: the class's answers hash.
-- KEYS[1] lab:room:<CODE>:answers
-- ARGV[1] the answer's field ("<widget>|<question>|<round>|<learner>")
-- ARGV[2] the answer as JSON (value, right, step, at, feedback)
-- ARGV[3] the learner's run of wrong answers on the widget ("wrong|<widget>|<learner>")
-- ARGV[4] 1 when Valkey bore the answer out, else 0
-- ARGV[5] the hash's lifetime, s: a class's answers outlive no class for long
-- ARGV[6] the lab event that tells the class page (JSON, published on ARGV[7])
-- ARGV[7] the lab's event channel
-- Returns: the learner's run of wrong answers on the widget, after this one.
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
local run = 0
if ARGV[4] == '1' then
  redis.call('HSET', KEYS[1], ARGV[3], 0)
else
  run = redis.call('HINCRBY', KEYS[1], ARGV[3], 1)
end
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[5]))
redis.call('PUBLISH', ARGV[7], ARGV[6])
return run
