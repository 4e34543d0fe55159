-- queue_keys: every key a widget's queue holds, read (or removed) in one call.
-- The widget's own lab keys share the queue's hashtag, so this is one slot.
-- KEYS[1] the widget's lab state hash, lab:{q}:state (read with the queue)
-- KEYS[2] the widget's action lock, lab:{q}:lock
-- ARGV[1] the queue base, emq:{q}:
-- ARGV[2] mode: 'begin' | 'reset' | 'read' | 'finish' | 'clear' | 'word'
-- ARGV[3] (begin, reset) the lock token to take; (finish) the one to release ('' none)
-- ARGV[4] (begin, reset) the lock's lease, ms; (finish) the outcome, JSON ('' keeps the last one)
-- ARGV[5] (finish) extra state fields, JSON object ('' none);
--   (reset) the state fields a Reset keeps, JSON list ('' none)
-- ARGV[6] (finish) the readings the outcome names, JSON object ('' none):
--   { name: { cmd: [COMMAND, key, ...], words: { value: sentence } } }
--   with COMMAND one of GET HGET ZSCORE ZCARD SCARD LLEN HLEN EXISTS on a key
--   of this queue; `{{name}}` in the outcome becomes the value read (or its
--   words), and a JSON string "{{=name}}" the bare value (a number, or null)
-- ARGV[7] (finish) keys of this queue to delete first, JSON list ('' none):
--   the action's best-effort tail (a completed job's :logs)
-- ARGV[8] (finish) the outcome's proof, JSON list of [COMMAND, key, ...] as
--   in ARGV[6] ('' none): the action sent writes just ahead of this call, in
--   the same round trip, and the outcome states their effect; each command
--   must find something (not nil, false or 0), else nothing is written
-- ARGV[9..] job ids the widget knows of (rows shown even when off every set)
-- Returns: begin/reset: { 0 } when another action holds the lock;
--   finish: { 0 } when the proof found nothing (no write, the lock kept);
--   begin/read/finish: { state, keys } where state is HGETALL of KEYS[1]
--   and keys is a list of { name, type, value } for every key that exists
--   (finish first reads the outcome's values, deletes the tail's keys and
--   writes ver = the server's clock in us, the outcome and the fields into
--   the state, releases the lock if it is still this action's, and records
--   the key count as the state's `keys`);
--   reset: { state, {} }: with the lock taken, every key removed as by
--   clear and the state written anew (landed = 1, the kept fields);
--   clear: the number of keys removed (the lock is left alone);
--   word: the outcome (ARGV[4]) with its readings (ARGV[6]) filled in.
--
-- The names are found, never probed over the wire: the queue's own keys, the
-- rows and subkeys of every known id and of every id found in a state set,
-- and the names the lab's index of extra keys (lab:{q}:index) lists.

local base = ARGV[1]
local mode = ARGV[2]
local q = string.match(base, '^emq:{(.*)}:$')
if not q then
  return redis.error_reply('ERR queue base must look like emq:{q}:')
end
local index_key = 'lab:{' .. q .. '}:index'

-- begin: one action at a time per widget. Tabs, class members and Reset
-- queue behind this lock, so every interleaving of clicks leaves a state
-- that clicking one at a time reaches; it lapses by itself (the lease) if
-- the site dies mid-action. Taken, the action gets the keys it starts from.
if (mode == 'begin' or mode == 'reset')
    and not redis.call('SET', KEYS[2], ARGV[3], 'NX', 'PX', tonumber(ARGV[4])) then
  return { 0 }
end

local function own(name)
  return type(name) == 'string' and (string.sub(name, 1, #base) == base
    or string.sub(name, 1, #q + 7) == 'lab:{' .. q .. '}:')
end

-- The values an outcome's sentence names, read in the step that records it:
-- the sentence says what Valkey held when the action ended, no read-back.
local readable = { GET = true, HGET = true, ZSCORE = true, ZCARD = true, SCARD = true,
  LLEN = true, HLEN = true, EXISTS = true }
local function filled(outcome, readings)
  local values = {}
  for name, reading in pairs(readings) do
    local cmd = reading['cmd']
    if not (readable[cmd[1]] and own(cmd[2])) then
      return redis.error_reply('ERR a reading must be ' ..
        'GET/HGET/ZSCORE/ZCARD/SCARD/LLEN/HLEN/EXISTS on a key of this queue')
    end
    local value = redis.call(unpack(cmd))
    values[name] = value
  end
  local function word(name)
    local value = values[name]
    if value == nil then
      return nil
    end
    local said = value and tostring(value) or 'none'
    local words = readings[name]['words']
    if type(words) == 'table' and words[said] then
      said = words[said]
    end
    return string.sub(cjson.encode(said), 2, -2)
  end
  outcome = string.gsub(outcome, '"{{=([%w_]+)}}"', function(name)
    local value = values[name]
    if value == nil then
      return nil
    end
    return (value and tonumber(value)) and tostring(tonumber(value)) or cjson.encode(value or cjson.null)
  end)
  return (string.gsub(outcome, '{{([%w_]+)}}', word))
end

-- word: an outcome's readings filled in, nothing written (a replayed step's sentence)
if mode == 'word' then
  return filled(ARGV[4], cjson.decode(ARGV[6]))
end

-- finish: an outcome stands only on its proof (the action's own writes,
-- sent ahead of this call in the same round trip, may have been refused)
if mode == 'finish' and ARGV[8] ~= '' then
  for _, cmd in ipairs(cjson.decode(ARGV[8])) do
    if not (readable[cmd[1]] and own(cmd[2])) then
      return redis.error_reply('ERR a proof must be ' ..
        'GET/HGET/ZSCORE/ZCARD/SCARD/LLEN/HLEN/EXISTS on a key of this queue')
    end
    local value = redis.call(unpack(cmd))
    if not value or value == 0 then
      return { 0 }
    end
  end
end

local queue_suffixes = { 'pending', 'active', 'schedule', 'dead', 'flow:outbox',
  'flow:outbox:poison', 'flow:outbox:head', 'metrics:completed' }
local state_sets = { 'pending', 'active', 'schedule', 'dead' }
local row_suffixes = { '', ':dependencies', ':processed', ':ignored', ':logs' }

local names, seen = {}, {}
local function add(name)
  if not seen[name] then
    seen[name] = true
    names[#names + 1] = name
  end
end
local function add_job(id)
  for _, suffix in ipairs(row_suffixes) do
    add(base .. 'job:' .. id .. suffix)
  end
end

for _, suffix in ipairs(queue_suffixes) do
  add(base .. suffix)
end
for i = 9, #ARGV do
  add_job(ARGV[i])
end
for _, suffix in ipairs(state_sets) do
  for _, id in ipairs(redis.call('ZRANGE', base .. suffix, 0, -1)) do
    add_job(id)
  end
end
for _, name in ipairs(redis.call('SMEMBERS', index_key)) do
  add(name)
end

if mode == 'clear' or mode == 'reset' then
  local kept = {}
  if mode == 'reset' and ARGV[5] ~= '' then
    for _, field in ipairs(cjson.decode(ARGV[5])) do
      local value = redis.call('HGET', KEYS[1], field)
      if value then
        kept[#kept + 1] = field
        kept[#kept + 1] = value
      end
    end
  end
  local removed = 0
  for _, name in ipairs(names) do
    removed = removed + redis.call('DEL', name)
  end
  removed = removed + redis.call('DEL', KEYS[1], index_key)
  if mode == 'clear' then
    return removed
  end
  redis.call('HSET', KEYS[1], 'landed', '1', unpack(kept))
  return { redis.call('HGETALL', KEYS[1]), {} }
end

if mode == 'finish' then
  -- the readings first: a bad one is refused before anything is written
  local outcome = ARGV[4]
  if ARGV[6] ~= '' and outcome ~= '' then
    outcome = filled(outcome, cjson.decode(ARGV[6]))
    if type(outcome) == 'table' then
      return outcome
    end
  end
  if ARGV[7] ~= '' then
    for _, name in ipairs(cjson.decode(ARGV[7])) do
      if own(name) then
        redis.call('DEL', name)
      end
    end
  end
  local clock = redis.call('TIME')
  -- seconds and microseconds side by side: a whole number no float can round
  local ver = clock[1] .. string.format('%06d', tonumber(clock[2]))
  local fields = { 'ver', ver }
  if outcome ~= '' then
    fields[#fields + 1] = 'outcome'
    fields[#fields + 1] = outcome
  end
  if ARGV[5] ~= '' then
    for field, value in pairs(cjson.decode(ARGV[5])) do
      fields[#fields + 1] = field
      fields[#fields + 1] = tostring(value)
    end
  end
  redis.call('HSET', KEYS[1], unpack(fields))
end

local found = {}
for _, name in ipairs(names) do
  local kind = redis.call('TYPE', name)['ok']
  local value = nil
  if kind == 'hash' then
    value = redis.call('HGETALL', name)
  elseif kind == 'zset' then
    value = redis.call('ZRANGE', name, 0, -1, 'WITHSCORES')
  elseif kind == 'list' then
    value = redis.call('LRANGE', name, 0, -1)
  elseif kind == 'set' then
    value = redis.call('SMEMBERS', name)
  elseif kind == 'string' then
    value = redis.call('GET', name)
  end
  if value ~= nil then
    found[#found + 1] = { name, kind, value }
  end
end
if mode == 'finish' then
  -- what the key cap is judged on by the next action's begin
  redis.call('HSET', KEYS[1], 'keys', #found)
  -- the lock goes last: its deletion tells every stream the action is over
  if ARGV[3] ~= '' and redis.call('GET', KEYS[2]) == ARGV[3] then
    redis.call('DEL', KEYS[2])
  end
end
return { redis.call('HGETALL', KEYS[1]), found }
