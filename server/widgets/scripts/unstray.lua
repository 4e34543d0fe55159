-- unstray: remove a widget's lock key when it holds what no lock writes (a Reset meeting it).
-- KEYS[1] the widget's lock, lab:{q}:lock
-- Every lock (the widgets' SET NX PX, the console's redis-py Lock) is a string with a lease:
-- another type, or a string without an expiry, was put there by an operator's command or a
-- fault, and no action could ever take the lock past it. The check and the DEL are one step,
-- so a lock an action holds now is never removed.
-- Returns: 1 removed; 0 nothing stray there.
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind == 'none' then
  return 0
end
if kind ~= 'string' or redis.call('PTTL', KEYS[1]) == -1 then
  return redis.call('DEL', KEYS[1])
end
return 0
