-- outbox_trim: remove the delivered prefix of an outbox, compare-and-trim.
-- KEYS[1] the flow:outbox list
-- ARGV[1..] the entries the caller delivered, in the order it read them
-- Returns: how many entries were removed from the head.
-- A blind LTRIM would let two pumps that read the same page trim it twice and
-- drop entries nobody delivered; popping only while the head is the entry we
-- delivered makes the second pump's trim a no-op.

local removed = 0
for i = 1, #ARGV do
  if redis.call('LINDEX', KEYS[1], 0) ~= ARGV[i] then
    break
  end
  redis.call('LPOP', KEYS[1])
  removed = removed + 1
end
return removed
