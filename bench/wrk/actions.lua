-- actions.lua: the action throughput figure, a widget's actions on many sandboxes.
--   wrk -s bench/wrk/actions.lua URL -- COOKIE_FILE THREADS WIDGET ACTIONS
-- ACTIONS: the walk each sandbox repeats, comma-separated (bench/mix.py:
-- Reset, then the actions the fan-in's tour replays). Each thread owns every
-- THREADS-th cookie of COOKIE_FILE (one sandbox each) and walks them
-- round-robin: round r of a sandbox sends the walk's (r mod length)-th
-- action. A sandbox is used again only after the thread has sent one
-- request to every other sandbox it owns, so two requests never overlap on
-- a sandbox as long as the pool per thread exceeds the connections per thread.
local here = debug.getinfo(1, "S").source:sub(2):match("(.*/)") or "./"
dofile(here .. "report.lua")

local counter = 1
function setup(thread)
  thread:set("tid", counter - 1)
  remember(thread)
  counter = counter + 1
end

local pool, n, i, widget, walk
function init(args)
  local all = {}
  for line in io.lines(args[1]) do
    if #line > 0 then all[#all + 1] = line end
  end
  local threads = tonumber(args[2])
  widget = args[3] or "fanin"
  walk = {}
  for action in string.gmatch(args[4] or "reset,complete-child,complete-child,complete-child", "[^,]+") do
    walk[#walk + 1] = action
  end
  pool = {}
  for k = 1, #all do
    if (k - 1) % threads == tid then pool[#pool + 1] = "emqlab_sandbox=" .. all[k] end
  end
  n = #pool
  i = 0
end

codes = {}
function response(status, headers, body)
  count_status(status)
end

function request()
  local cookie = pool[(i % n) + 1]
  local round = math.floor(i / n) % #walk
  i = i + 1
  return wrk.format("POST", "/api/widgets/" .. widget .. "/" .. walk[round + 1],
    { ["Host"] = host_header(), ["Content-Type"] = "application/json", ["Cookie"] = cookie }, "{}")
end
