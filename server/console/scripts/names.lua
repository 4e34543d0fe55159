#!lua flags=no-writes
-- names: the keys one queue of a sandbox holds, found by name as a Reset finds them (never a scan).
-- Site script (not EchoMQ's). One slot: every name carries the queue's hashtag {<sandbox>.<queue>}.
-- no-writes: it reads only, so it runs over maxmemory too.
-- KEYS[1] the queue's index of extra key names, lab:{q}:index
-- ARGV[1] the queue base, emq:{q}:
-- ARGV[2..] the job ids its widget lands (rows shown even off every set)
-- Returns: name, type, name, type, ... of the keys that exist. Its work is bounded by the
--   queue's own keys (queue_names: the queue's keys, 64 rows per state set, the index's names).

-- @include queue_names

local ids = {}
for i = 2, #ARGV do
  ids[#ids + 1] = ARGV[i]
end
local found = {}
for _, name in ipairs(queue_names(ARGV[1], ids, KEYS[1])) do
  local kind = redis.call('TYPE', name)['ok']
  if kind ~= 'none' then
    found[#found + 1] = name
    found[#found + 1] = kind
  end
end
return found
