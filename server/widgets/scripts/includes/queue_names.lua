-- queue_names: the names of every key a widget queue may hold, found on the
-- server (never probed over the wire): the queue's own keys, the row and
-- subkeys of each known id and of the first ids each state set holds, and
-- the names the queue's index lists (extra keys a console wrote; a listed
-- row brings its subkeys). A key of the wrong type is still named: whoever
-- reads it looks at its TYPE first.
local queue_suffixes = { 'pending', 'active', 'schedule', 'dead', 'flow:outbox',
  'flow:outbox:poison', 'flow:outbox:head', 'metrics:completed' }
local state_sets = { 'pending', 'active', 'schedule', 'dead' }
local row_suffixes = { '', ':dependencies', ':processed', ':ignored', ':logs' }
local SET_ROWS = 64 -- rows looked up per state set: a flooded set cannot blow up a read

local function queue_names(base, ids, index_key)
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
  for _, id in ipairs(ids) do
    add_job(id)
  end
  for _, suffix in ipairs(state_sets) do
    local key = base .. suffix
    if redis.call('TYPE', key)['ok'] == 'zset' then
      for _, id in ipairs(redis.call('ZRANGE', key, 0, SET_ROWS - 1)) do
        add_job(id)
      end
    end
  end
  if redis.call('TYPE', index_key)['ok'] == 'set' then
    local rows = base .. 'job:'
    for _, name in ipairs(redis.call('SMEMBERS', index_key)) do
      local id = string.sub(name, #rows + 1)
      if string.sub(name, 1, #rows) == rows and id ~= '' and not string.find(id, ':', 1, true) then
        add_job(id) -- a row the console's script made: its subkeys go with it
      else
        add(name)
      end
    end
  end
  return names
end
