-- post.lua: POST "{}" as JSON to the URL's path (the baseline endpoint).
local here = debug.getinfo(1, "S").source:sub(2):match("(.*/)") or "./"
dofile(here .. "report.lua")
wrk.method = "POST"
wrk.body = "{}"
wrk.headers["Content-Type"] = "application/json"

function setup(thread) remember(thread) end
codes = {}
function response(status, headers, body) count_status(status) end
