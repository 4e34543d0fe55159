-- release: let go of a widget's lock without recording anything (an action that failed).
-- KEYS[1] the widget's lock, lab:{q}:lock
-- ARGV[1] the lock token the action holds
-- Returns: 1 released; 0 it was not (or no longer) this action's.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
