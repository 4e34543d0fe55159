#!lua flags=allow-oom
-- weigh: charge a queue what Valkey reports its written keys hold, after a console write.
-- Site script (not EchoMQ's). One slot: every key carries the queue's hashtag {<sandbox>.<queue>}.
-- allow-oom: it runs after the write, so a write that took Valkey past maxmemory is still charged
-- (the hash it keeps is a few fields; every other write of the site is refused there).
-- KEYS[1] the queue's budget, lab:{q}:spent (hash: key name -> MEMORY USAGE, and 'total')
-- KEYS[2..] the keys the write may have changed (the queue's own keys, the rows it named)
-- SAMPLES 0: every element counted (the default 5 samples put a skiplist zset 28% low); the walk
-- is bounded by the budget itself, which stops a sandbox's keys near 1 MB.
-- Returns: the queue's total, bytes: the sum of the last MEMORY USAGE of every key it weighed.
local spent = KEYS[1]
local kind = redis.call('TYPE', spent)['ok']
if kind ~= 'hash' and kind ~= 'none' then
  redis.call('DEL', spent) -- an older site's counter (a string): weighed afresh from here
end
local total = tonumber(redis.call('HGET', spent, 'total') or '0') or 0
for i = 2, #KEYS do
  local now = redis.call('MEMORY', 'USAGE', KEYS[i], 'SAMPLES', 0) or 0
  local was = tonumber(redis.call('HGET', spent, KEYS[i]) or '0') or 0
  if now ~= was then
    if now == 0 then
      redis.call('HDEL', spent, KEYS[i])
    else
      redis.call('HSET', spent, KEYS[i], now)
    end
    total = total + now - was
  end
end
if total < 0 then
  total = 0
end
redis.call('HSET', spent, 'total', total)
return total
