-- begin: take a widget's action lock, and say whether its scenario has landed.
-- One widget acts one action at a time in one sandbox: tabs, class members
-- and Reset all queue behind this lock, so every interleaving of clicks leaves
-- a state that clicking one at a time could reach.
-- KEYS[1] the widget's action lock, lab:{q}:lock
-- KEYS[2] the widget's lab state hash, lab:{q}:state
-- ARGV[1] this action's lock token
-- ARGV[2] the lock's lease, ms (it lapses by itself if the site dies mid-action)
-- Returns: { taken, landed, keys }: taken 1 when the lock is ours, 0 when
--   another action holds it; landed the state's landed field ('' when the
--   scenario has not landed, or landed only halfway); keys the key count the
--   last action recorded.

local taken = redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', tonumber(ARGV[2]))
local found = redis.call('HMGET', KEYS[2], 'landed', 'keys')
return { taken and 1 or 0, found[1] or '', found[2] or '0' }
