-- report.lua: the `done` every bench/wrk script shares. It prints one line,
-- "WRKJSON {...}", that bench/wrkrun.py parses (latencies in microseconds).
-- A script that counts answers by status defines `codes` (a table, per
-- thread) and calls `remember(thread)` from its setup; done() adds them up.
local threads = {}
function remember(thread) threads[#threads + 1] = thread end

-- The Host header, written by the script itself: a request built with
-- wrk.format and a headers table of its own gets no Host from every wrk
-- version, and an HTTP/1.1 request without one is answered 400.
function host_header()
  if wrk.headers["Host"] then return wrk.headers["Host"] end
  return wrk.host .. (wrk.port and (":" .. wrk.port) or "")
end

function count_status(status)
  local key = tostring(status)
  codes[key] = (codes[key] or 0) + 1
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
