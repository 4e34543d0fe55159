-- presence: one open page's stream says it is still there (when it opens, then on every beat).
-- Site script (not EchoMQ's). One key: the sandbox's activity record.
-- KEYS[1] lab:{s}:meta
-- ARGV[1] the stream's field, 'p:<stream id>'
-- ARGV[2] '<until, s>|<page>': the entry counts the visitor online until then
-- ARGV[3] now, s: entries whose time is past are removed (a dead site's streams)
-- ARGV[4] the record's lifetime, s
-- Returns: the number of entries still there, this one included.
-- @include fresh_record
local fields = redis.call('HGETALL', KEYS[1])
local now, left = tonumber(ARGV[3]), 1
for i = 1, #fields, 2 do
  local field = fields[i]
  if string.sub(field, 1, 2) == 'p:' and field ~= ARGV[1] then
    local untilS = tonumber(string.match(fields[i + 1], '^(%d+)|'))
    if untilS == nil or untilS <= now then
      redis.call('HDEL', KEYS[1], field)
    else
      left = left + 1
    end
  end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[4]))
return left
