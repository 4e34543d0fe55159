-- release: let go of a widget's action lock, if it is still this action's.
-- (An action that outlived the lease may find another action holding it.)
-- KEYS[1] the widget's action lock, lab:{q}:lock
-- ARGV[1] this action's lock token
-- Returns: 1 released, 0 not ours (or already lapsed).

if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
