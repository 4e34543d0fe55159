-- streams.lua: hold live streams open, one per connection, as open pages do.
--   wrk -s bench/wrk/streams.lua URL -- STREAM_FILE THREADS
-- STREAM_FILE: one stream a line, "PATH COOKIE" (COOKIE "-" for none). A stream never completes,
-- so each connection holds the one it opened; one the server ends is opened again with the
-- thread's next line. Run with a long --timeout; bytes read and connect/read errors are reported.
local here = debug.getinfo(1, "S").source:sub(2):match("(.*/)") or "./"
dofile(here .. "report.lua")

local pool, i
function init(args)
  pool, i = share(args[1], tonumber(args[2])), 0
end

function request()
  local path, cookie = pool[(i % #pool) + 1]:match("^(%S+) (%S+)$")
  i = i + 1
  local headers = { ["Host"] = host_header(), ["Accept"] = "text/event-stream" }
  if cookie ~= "-" then headers["Cookie"] = "emqlab_sandbox=" .. cookie end
  return wrk.format("GET", path, headers)
end
