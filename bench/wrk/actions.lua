-- actions.lua: figure 1, the "Complete child" action on many sandboxes.
--   wrk -s bench/wrk/actions.lua URL -- COOKIE_FILE THREADS [WIDGET]
-- Each thread owns every THREADS-th cookie of COOKIE_FILE (one sandbox each)
-- and walks them round-robin: round 0 of a sandbox is `reset` (lands the
-- flow: a parent held on 3 children), rounds 1-3 are `complete-child`, then
-- again. A sandbox is used again only after the thread has sent one request
-- to every other sandbox it owns, so two requests never overlap on a sandbox
-- as long as the pool per thread exceeds the connections per thread.
local here = debug.getinfo(1, "S").source:sub(2):match("(.*/)") or "./"
dofile(here .. "report.lua")

local counter = 1
function setup(thread)
  thread:set("tid", counter - 1)
  remember(thread)
  counter = counter + 1
end

local pool, n, i, widget
function init(args)
  local all = {}
  for line in io.lines(args[1]) do
    if #line > 0 then all[#all + 1] = line end
  end
  local threads = tonumber(args[2])
  widget = args[3] or "fanin"
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
  local round = math.floor(i / n) % 4
  i = i + 1
  local action = "complete-child"
  if round == 0 then action = "reset" end
  return wrk.format("POST", "/api/widgets/" .. widget .. "/" .. action,
    { ["Host"] = host_header(), ["Content-Type"] = "application/json", ["Cookie"] = cookie }, "{}")
end
