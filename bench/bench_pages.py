"""Pages: dive page requests per second against a static file
served by the same app (`/static/site.css` through Starlette's StaticFiles),
same worker, same wrk settings, same run.

The dive is requested by a returning visitor (with a sandbox cookie); a
first visit (no cookie: the middleware mints and signs a new sandbox cookie)
is measured too.
"""

from __future__ import annotations

import time
from typing import Any

from bench import servers
from bench.wrkrun import run_wrk


def run(site_url: str, seconds: float = 10, connections: int = 50, threads: int = 2) -> dict[str, Any]:
    cookie = servers.new_cookie(site_url)
    status, body = servers.get(site_url, servers.DIVE, cookie)
    if status != 200 or b'data-widget="fanin"' not in body:
        raise RuntimeError(f"the dive answered {status} without its fan-in widget")
    settle = 1.0 if seconds >= 5 else 0.2
    run_wrk(site_url + servers.DIVE, "get.lua", 1, connections, threads, [cookie])  # warm-up
    static = run_wrk(site_url + servers.STATIC, "get.lua", seconds, connections, threads, [cookie])
    time.sleep(settle)
    dive = run_wrk(site_url + servers.DIVE, "get.lua", seconds, connections, threads, [cookie])
    time.sleep(settle)
    first = run_wrk(site_url + servers.DIVE, "get.lua", max(1, seconds / 2), connections, threads, [""])
    return {
        "page": servers.DIVE,
        "static": servers.STATIC,
        "page_bytes": len(body),
        "baseline_static": static,
        "dive": dive,
        "dive_first_visit": first,
        "ratio": round(dive["rps"] / static["rps"], 2) if static["rps"] else 0.0,
        "ratio_first_visit": round(first["rps"] / static["rps"], 2) if static["rps"] else 0.0,
    }
