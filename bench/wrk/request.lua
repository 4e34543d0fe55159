-- request.lua: GET the URL's path again and again, or POST a JSON BODY when one is given.
--   wrk -s bench/wrk/request.lua URL -- [COOKIE] [PAUSE_MS] [BODY]
local here = debug.getinfo(1, "S").source:sub(2):match("(.*/)") or "./"
dofile(here .. "report.lua")
function init(args)
  wrk.headers["Host"] = host_header()
  if args[1] and #args[1] > 0 then wrk.headers["Cookie"] = "emqlab_sandbox=" .. args[1] end
  pace(args[2])
  if args[3] and #args[3] > 0 then
    wrk.method, wrk.body = "POST", args[3]
    wrk.headers["Content-Type"] = "application/json"
  end
end
