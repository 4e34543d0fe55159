-- get.lua: GET the URL's path, with a sandbox cookie when one is given.
--   wrk -s bench/wrk/get.lua URL -- [COOKIE] [PAUSE_MS]
local here = debug.getinfo(1, "S").source:sub(2):match("(.*/)") or "./"
dofile(here .. "report.lua")
function init(args)
  wrk.headers["Host"] = host_header()
  if args[1] and #args[1] > 0 then wrk.headers["Cookie"] = "emqlab_sandbox=" .. args[1] end
  pace(args[2])
end
