-- console.lua: one console command, POSTed again and again from one sandbox.
--   wrk -s bench/wrk/console.lua URL -- COOKIE COMMAND_JSON
local here = debug.getinfo(1, "S").source:sub(2):match("(.*/)") or "./"
dofile(here .. "report.lua")

function setup(thread) remember(thread) end

function init(args)
  wrk.method = "POST"
  wrk.path = "/api/console"
  wrk.body = args[2]
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["Cookie"] = "emqlab_sandbox=" .. args[1]
end

codes = {}
function response(status, headers, body) count_status(status) end
