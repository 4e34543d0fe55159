-- snapshot: one scenario's keys, read for the key picture and for the checks.
-- Run by the grader's admin client only, never as a learner's run user.
-- KEYS[1..] the keys the checks judge: read first, whatever the scan finds
-- ARGV[1] the MATCH pattern of every key of the scenario
-- ARGV[2] the most keys the picture holds (the judged keys always count)
-- ARGV[3] the most elements shown per key (a string shows ARGV[3] * 64 bytes)
-- Returns: one {name, type, size, value} per key that exists; value is a flat
--   list (a hash's field, value, ...; a sorted set's member, score, ...).
-- The scan is bounded too: a script that wrote thousands of keys gets a
-- picture of the first of them, not a grader busy for a second.

local most = tonumber(ARGV[2])
local width = tonumber(ARGV[3])
local names, seen = {}, {}
for _, name in ipairs(KEYS) do
  if not seen[name] then
    seen[name] = true
    names[#names + 1] = name
  end
end

local cursor, rounds = '0', 0
repeat
  local page = redis.call('SCAN', cursor, 'MATCH', ARGV[1], 'COUNT', 256)
  cursor = page[1]
  for _, name in ipairs(page[2]) do
    if not seen[name] and #names < most then
      seen[name] = true
      names[#names + 1] = name
    end
  end
  rounds = rounds + 1
until cursor == '0' or #names >= most or rounds >= 64

local out = {}
for _, name in ipairs(names) do
  local kind = redis.call('TYPE', name)['ok']
  if kind ~= 'none' then
    local size, value = 0, {}
    if kind == 'string' then
      size = redis.call('STRLEN', name)
      value = {redis.call('GETRANGE', name, 0, width * 64 - 1)}
    elseif kind == 'hash' then
      size = redis.call('HLEN', name)
      if size <= width then
        value = redis.call('HGETALL', name)
      else
        value = redis.call('HRANDFIELD', name, width, 'WITHVALUES')
      end
    elseif kind == 'list' then
      size = redis.call('LLEN', name)
      value = redis.call('LRANGE', name, 0, width - 1)
    elseif kind == 'set' then
      size = redis.call('SCARD', name)
      value = redis.call('SRANDMEMBER', name, width)
    elseif kind == 'zset' then
      size = redis.call('ZCARD', name)
      value = redis.call('ZRANGE', name, 0, width - 1, 'WITHSCORES')
    end
    out[#out + 1] = {name, kind, size, value}
  end
end
return out
