-- key_grammar: the type the key grammar gives a key of a queue, read from
-- what follows emq:{q}: (DESIGN.md). server/emq/keyspace.py reads these very
-- rows (GRAMMAR), so the host's checks and the scripts' share one table.
local KEY_GRAMMAR = {
  {'job:[^:]+', 'hash'},
  {'job:[^:]+:dependencies', 'string'},
  {'job:[^:]+:processed', 'hash'},
  {'job:[^:]+:ignored', 'hash'},
  {'pending', 'zset'},
  {'active', 'zset'},
  {'schedule', 'zset'},
  {'dead', 'zset'},
  {'metrics:completed', 'hash'},
  {'flow:outbox:head', 'hash'},
  {'flow:outbox', 'list'},
  {'flow:outbox:poison', 'list'},
}

-- The grammar's type of `key`, or nil for a key the grammar does not name.
local function grammar_type(key)
  local suffix = string.match(key, '^emq:{[^{}]*}:(.*)$')
  if not suffix then
    return nil
  end
  for _, row in ipairs(KEY_GRAMMAR) do
    if string.find(suffix, '^' .. row[1] .. '$') then
      return row[2]
    end
  end
  return nil
end
