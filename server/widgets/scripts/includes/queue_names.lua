-- queue_names: the names of every key a widget queue may hold, found on the
-- server (never probed over the wire): the queue's own keys, the row and
-- subkeys of each known id and of the first ids each state set holds, and
-- the names the queue's index lists (extra keys a console wrote). A key of
-- the wrong type is still named: whoever reads it looks at its TYPE first.
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
    for _, name in ipairs(redis.call('SMEMBERS', index_key)) do
      add(name)
    end
  end
  return names
end
