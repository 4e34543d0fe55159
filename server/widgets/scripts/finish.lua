-- finish: record what an action did and let go of the widget's lock.
-- KEYS[1] the widget's lab state hash, lab:{q}:state
-- KEYS[2] the widget's lock, lab:{q}:lock
-- ARGV[1] the lock token this action holds
-- ARGV[2] the outcome, JSON ('' keeps the last one)
-- ARGV[3] lab state fields to write beside it, JSON object ('' none)
-- Returns: ver, the server's clock in microseconds, written as the state's
--   `ver`: every page paints a widget's snapshots in ver order. The lock goes
--   last: its deletion tells every stream the action is over.

local clock = redis.call('TIME')
-- seconds and microseconds side by side: a whole number no float can round
local ver = clock[1] .. string.format('%06d', tonumber(clock[2]))
local fields = { 'ver', ver }
if ARGV[2] ~= '' then
  fields[#fields + 1] = 'outcome'
  fields[#fields + 1] = ARGV[2]
end
if ARGV[3] ~= '' then
  for field, value in pairs(cjson.decode(ARGV[3])) do
    fields[#fields + 1] = field
    fields[#fields + 1] = tostring(value)
  end
end
if redis.call('TYPE', KEYS[1])['ok'] ~= 'hash' then
  redis.call('DEL', KEYS[1])
end
redis.call('HSET', KEYS[1], unpack(fields))
if redis.call('GET', KEYS[2]) == ARGV[1] then
  redis.call('DEL', KEYS[2])
end
return ver
