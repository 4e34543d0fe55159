-- report.lua: what every bench/wrk script shares. done() prints one line,
-- "WRKJSON {...}", that bench/wrkrun.py parses (latencies in microseconds),
-- with every answer counted by status.
local threads = {}

-- The Host header, written by the scripts themselves: a request built with
-- wrk.format and a headers table of its own gets none, and HTTP/1.1 without one is a 400.
function host_header()
  return wrk.host .. (wrk.port and (":" .. wrk.port) or "")
end

-- The milliseconds each connection waits before its next request; wrk asks
-- for delay() only when a script defines it, so none is defined for 0.
-- `independent`: each wait is drawn uniformly from 0 to twice the pause (the
-- same mean, the same rate), so connections opened together do not stay in
-- step: learners act on clocks of their own, not on one beat for the crowd.
function pace(ms, independent)
  local pause = tonumber(ms) or 0
  if pause > 0 and independent then
    math.randomseed(os.time() * 1000 + tid)  -- each thread its own draws
    delay = function() return math.random(0, 2 * pause) end
  elseif pause > 0 then
    delay = function() return pause end
  end
end

codes = {}
function response(status, headers, body) codes[tostring(status)] = (codes[tostring(status)] or 0) + 1 end

-- Lines of a file, the `tid`-th of every `threads` (a thread's own share).
function share(file, threads)
  local mine, k = {}, 0
  for line in io.lines(file) do
    if #line > 0 then
      if k % threads == tid then mine[#mine + 1] = line end
      k = k + 1
    end
  end
  return mine
end

local counter = 0
function setup(thread)
  thread:set("tid", counter)
  counter = counter + 1
  threads[#threads + 1] = thread
end

function done(summary, latency, requests)
  local e = summary.errors
  local merged, parts = {}, {}
  for _, thread in ipairs(threads) do
    local got = thread:get("codes")
    if type(got) == "table" then
      for k, v in pairs(got) do merged[k] = (merged[k] or 0) + v end
    end
  end
  for k, v in pairs(merged) do parts[#parts + 1] = string.format('"%s":%d', k, v) end
  io.write(string.format(
    'WRKJSON {"requests":%d,"duration_us":%d,"bytes":%d,' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"latency_us":{"mean":%.1f,"p50":%d,"p90":%d,"p99":%d,"max":%d},"codes":{%s}}\n',
    summary.requests, summary.duration, summary.bytes,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency.mean, latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max,
    table.concat(parts, ",")))
end
