-- now_ms: the server's clock in milliseconds; every score in ms is read from it,
-- so leases, backoffs and deaths are measured by one clock, not each worker's.
local function now_ms()
  local clock = redis.call('TIME')
  return tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
end
