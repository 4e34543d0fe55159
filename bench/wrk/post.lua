-- post.lua: POST a JSON body ("{}" by default) to the URL's path, again and again.
--   wrk -s bench/wrk/post.lua URL -- [COOKIE] [PAUSE_MS] [BODY]
local here = debug.getinfo(1, "S").source:sub(2):match("(.*/)") or "./"
dofile(here .. "report.lua")
function init(args)
  wrk.method = "POST"
  wrk.body = (args[3] and #args[3] > 0) and args[3] or "{}"
  wrk.headers["Host"] = host_header()
  wrk.headers["Content-Type"] = "application/json"
  if args[1] and #args[1] > 0 then wrk.headers["Cookie"] = "emqlab_sandbox=" .. args[1] end
  pace(args[2])
end
