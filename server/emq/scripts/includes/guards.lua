-- guards: what a script a learner can call checks before its first write.
-- A call whose KEYS and ARGV do not fit the script's layout (EMQARGS), a key
-- it would turn into another type (EMQTYPE), or a stored value it cannot count
-- with (EMQDATA) is refused whole: the script's work is bounded by what it was
-- given, and nothing is half-written. Each helper returns the error reply to
-- give back at once, or nil.
-- @include key_grammar

local function guard_span(least, most)
  if least == most then
    return tostring(least)
  elseif most == math.huge then
    return 'at least ' .. least
  end
  return least .. ' to ' .. most
end

-- The layout: keys_least..keys_most KEYS and argv_least..argv_most ARGV
-- (math.huge: no upper bound, where a count in ARGV bounds the rest).
local function layout_refusal(verb, keys_least, keys_most, argv_least, argv_most)
  if #KEYS < keys_least or #KEYS > keys_most or #ARGV < argv_least or #ARGV > argv_most then
    return redis.error_reply('EMQARGS ' .. verb .. ' takes ' .. guard_span(keys_least, keys_most) .. ' KEYS and '
      .. guard_span(argv_least, argv_most) .. ' ARGV; got ' .. #KEYS .. ' and ' .. #ARGV)
  end
  return nil
end

-- A whole number as a script computes with it: digits 0-9 only, at most 15 of
-- them (tonumber alone would take '1e9', '0x10' and ' 7'); nil otherwise.
local function whole_number(value)
  if type(value) == 'string' and #value <= 15 and string.find(value, '^%d+$') then
    return tonumber(value)
  end
  return nil
end

-- ARGV[i] must be a whole number.
local function number_refusal(verb, i)
  if whole_number(ARGV[i]) == nil then
    return redis.error_reply('EMQARGS ' .. verb .. ': ARGV[' .. i .. '] must be a whole number written with the '
      .. 'digits 0-9 (at most 15)')
  end
  return nil
end

-- A count ARGV[i] gives (N children) held to the KEYS and ARGV that carry
-- what it counts: exactly fixed_keys + N * keys_each KEYS and fixed_argv +
-- N * argv_each ARGV, so a loop over N runs no further than what was given.
local function count_refusal(verb, i, fixed_keys, keys_each, fixed_argv, argv_each)
  local n = whole_number(ARGV[i])
  if n == nil then
    return number_refusal(verb, i)
  end
  if #KEYS ~= fixed_keys + n * keys_each or #ARGV ~= fixed_argv + n * argv_each then
    return redis.error_reply('EMQARGS ' .. verb .. ': ARGV[' .. i .. '] says ' .. ARGV[i] .. ', so it takes '
      .. (fixed_keys + n * keys_each) .. ' KEYS and ' .. (fixed_argv + n * argv_each) .. ' ARGV; got '
      .. #KEYS .. ' and ' .. #ARGV)
  end
  return nil
end

-- A key the script writes as `kind` ('hash', 'zset', 'string', 'list'): refused
-- when the key grammar gives its name another type, or it holds another type.
-- `role` names it in the reply ('KEYS[2]', 'the pending set'), never the key
-- itself: its name carries the sandbox.
local function type_refusal(verb, key, kind, role)
  local named = grammar_type(key)
  if named and named ~= kind then
    return redis.error_reply('EMQTYPE ' .. verb .. ' would write ' .. role .. ' as a ' .. kind
      .. ', but the key grammar makes that key a ' .. named .. ': nothing was written')
  end
  local held = redis.call('TYPE', key)['ok']
  if held ~= 'none' and held ~= kind then
    return redis.error_reply('EMQTYPE ' .. verb .. ' would write ' .. role .. ' as a ' .. kind
      .. ', but it holds a ' .. held .. ': nothing was written')
  end
  return nil
end

-- Every key of `roles` ({key, kind, role, key, kind, role, ...}), in order.
local function types_refusal(verb, roles)
  for i = 1, #roles, 3 do
    local refused = type_refusal(verb, roles[i], roles[i + 1], roles[i + 2])
    if refused then
      return refused
    end
  end
  return nil
end

-- A stored number the script adds to (HINCRBY, DECR): absent (false), or a
-- whole number of at most 15 digits, so the step stays in Valkey's range too.
local function stored_number_refusal(verb, value, what)
  if value == false or value == nil then
    return nil
  end
  local digits = string.match(value, '^%-?(%d+)$')
  if digits and #digits <= 15 then
    return nil
  end
  return redis.error_reply('EMQDATA ' .. verb .. ': ' .. what .. ' is not a whole number it can count with '
    .. '(a console write changed it?): nothing was written; a widget\'s Reset lands its keys again')
end
