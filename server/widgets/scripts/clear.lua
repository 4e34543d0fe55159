-- clear: remove every key of one widget queue, whatever types they hold (Reset).
-- KEYS[1] the widget's lab state hash, lab:{q}:state
-- KEYS[2] the queue's index of extra key names, lab:{q}:index
-- KEYS[3] the queue's byte counter, lab:{q}:spent (what the console's writes added)
-- ARGV[1] the queue base, emq:{q}:
-- ARGV[2] the lab state fields to keep (a learner's choices and the landed mark
--   are not kept by this script: the caller writes the fresh state), JSON list
-- ARGV[3..] job ids the widget knows of
-- Returns: the number of keys removed. The widget's lock (lab:{q}:lock) stays:
--   the Reset that holds it lets go when it finishes.

-- @include queue_names

local ids = {}
for i = 3, #ARGV do
  ids[#ids + 1] = ARGV[i]
end
local kept = {}
if redis.call('TYPE', KEYS[1])['ok'] == 'hash' then
  for _, field in ipairs(cjson.decode(ARGV[2])) do
    local value = redis.call('HGET', KEYS[1], field)
    if value then
      kept[#kept + 1] = field
      kept[#kept + 1] = value
    end
  end
end
local removed = 0
for _, name in ipairs(queue_names(ARGV[1], ids, KEYS[2])) do
  removed = removed + redis.call('DEL', name)
end
removed = removed + redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
if #kept > 0 then
  redis.call('HSET', KEYS[1], unpack(kept))
end
return removed
