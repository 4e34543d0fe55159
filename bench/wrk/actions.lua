-- actions.lua: a widget's actions on many sandboxes.
--   wrk -s bench/wrk/actions.lua URL -- COOKIE_FILE THREADS WIDGET ACTIONS [PAUSE_MS]
-- ACTIONS: the walk each sandbox repeats, comma-separated (bench/probe.py WALK). Each thread
-- owns every THREADS-th cookie (a sandbox) and walks them round-robin, one step per round: two
-- requests never overlap on one sandbox while a thread holds more sandboxes than connections.
-- PAUSE_MS paces each connection (its mean pause, each drawn at random), 0 for as fast as it answers. WIDGET "-": the bare learners
-- of bench/baseline_app.py, POST /act/<line>.
local here = debug.getinfo(1, "S").source:sub(2):match("(.*/)") or "./"
dofile(here .. "report.lua")

local pool, i, widget, walk
function init(args)
  pool = share(args[1], tonumber(args[2]))
  widget, walk, i = args[3], {}, 0
  for action in string.gmatch(args[4], "[^,]+") do walk[#walk + 1] = action end
  pace(args[5], true)  -- learners act independently: see report.lua
end

function request()
  local cookie = pool[(i % #pool) + 1]
  local round = math.floor(i / #pool) % #walk
  i = i + 1
  if widget == "-" then
    return wrk.format("POST", "/act/" .. cookie, { ["Host"] = host_header(), ["Content-Type"] = "application/json" }, "{}")
  end
  return wrk.format("POST", "/api/widgets/" .. widget .. "/" .. walk[round + 1],
    { ["Host"] = host_header(), ["Content-Type"] = "application/json",
      ["Cookie"] = "emqlab_sandbox=" .. cookie }, "{}")
end
