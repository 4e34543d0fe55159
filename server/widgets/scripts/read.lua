-- read: every key of one widget queue and the widget's lab state, as a page draws them.
-- KEYS[1] the widget's lab state hash, lab:{q}:state (same slot as the queue)
-- KEYS[2] the queue's index of extra key names, lab:{q}:index
-- ARGV[1] the queue base, emq:{q}:
-- ARGV[2] the byte budget for the names and values (a snapshot stays small whatever a console wrote)
-- ARGV[3..] job ids the widget knows of (their rows are shown even when off every set)
-- Returns: { state, keys, more }: state is HGETALL of KEYS[1] (empty when KEYS[1]
--   holds another type: the widget reads as not landed, so its next showing or
--   Reset lands it again, and clear.lua removes the stray key); keys is a list of
--   { name, type, value, size } for each key that exists, in a fixed order:
--   size is a string's length in bytes or a collection's element count;
--   value is the whole value while the budget lasts, then cut (a string to
--   its first CUT bytes, a collection to its first ELEMENTS elements), and
--   false once the budget is spent; more counts the keys left out past MAX_KEYS.

-- @include queue_names

local CUT, ELEMENTS, MAX_KEYS = 1024, 64, 200
local budget = tonumber(ARGV[2])
local ids = {}
for i = 3, #ARGV do
  ids[#ids + 1] = ARGV[i]
end

local function cut(s)
  if #s > CUT then
    return string.sub(s, 1, CUT)
  end
  return s
end

-- A value's pieces while the budget lasts, a pair at a time for a hash or a zset,
-- at most ELEMENTS of them: one big key never carries the read past its budget
-- (an HSCAN's COUNT is only a hint, and a page of it can hold more).
local function spend(kind, value)
  if type(value) == 'string' then
    value = cut(value)
    budget = budget - #value
    return value
  end
  local step = (kind == 'hash' or kind == 'zset') and 2 or 1
  local kept = {}
  for i = 1, #value - step + 1, step do
    if budget <= 0 or #kept >= ELEMENTS * step then
      break
    end
    for j = i, i + step - 1 do
      kept[#kept + 1] = cut(value[j])
      budget = budget - #kept[#kept]
    end
  end
  return kept
end

-- the value of one key, whole when small, else its first ELEMENTS elements
local function value_of(name, kind, size)
  local whole = size <= ELEMENTS
  if kind == 'string' then
    return whole and redis.call('GET', name) or redis.call('GETRANGE', name, 0, CUT - 1)
  elseif kind == 'hash' then
    return whole and redis.call('HGETALL', name) or redis.call('HSCAN', name, 0, 'COUNT', ELEMENTS)[2]
  elseif kind == 'zset' then
    return redis.call('ZRANGE', name, 0, ELEMENTS - 1, 'WITHSCORES')
  elseif kind == 'list' then
    return redis.call('LRANGE', name, 0, ELEMENTS - 1)
  elseif kind == 'set' then
    return whole and redis.call('SMEMBERS', name) or redis.call('SSCAN', name, 0, 'COUNT', ELEMENTS)[2]
  end
  return false
end

local sizes = { string = 'STRLEN', hash = 'HLEN', zset = 'ZCARD', list = 'LLEN', set = 'SCARD' }
local found, more = {}, 0
for _, name in ipairs(queue_names(ARGV[1], ids, KEYS[2])) do
  local kind = redis.call('TYPE', name)['ok']
  if kind ~= 'none' then
    if #found >= MAX_KEYS then
      more = more + 1
    else
      local size = sizes[kind] and redis.call(sizes[kind], name) or 0
      local value = false
      budget = budget - #name  -- the names are sent too
      if budget > 0 then
        value = value_of(name, kind, size)
        if value then
          value = spend(kind, value)
        end
      end
      found[#found + 1] = { name, kind, value, size }
    end
  end
end
-- the lab state only as a hash: a stray SET on it must not make every read (and so the Reset) fail
local state = {}
if redis.call('TYPE', KEYS[1])['ok'] == 'hash' then
  state = redis.call('HGETALL', KEYS[1])
end
return { state, found, more }
