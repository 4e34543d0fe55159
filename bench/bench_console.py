"""The console's throughput: one read and one refusal per request, at 50
concurrent connections, beside the minimal one-EVALSHA endpoint in the same
run; and the price of planning a line (split, allowlist, confinement) alone.

A read goes through the action guards (origin, sandbox, rate and activity
pipeline), the plan, one command on the console's RESP2 client and the
transcript's write; a refusal stops at the plan and sends nothing.

    python -m bench.bench_console [--seconds 5]
"""

from __future__ import annotations

import json
import time
from typing import Any

from bench import servers
from bench.wrkrun import run_wrk
from server.console.confine import Confinement
from server.console.parse import Limits
from server.console.plan import plan

READ = "HGETALL emq:{fanin}:job:JOBparent"
REFUSED = "FLUSHALL"
LINES = [READ, "ZRANGE emq:{fanin}:pending 0 -1 WITHSCORES",
         "complete 5 emq:{fanin}:active emq:{fanin}:job:JOBchild1 emq:{fanin}:job:JOBparent:dependencies "
         "emq:{fanin}:job:JOBparent:processed emq:{fanin}:job:JOBparent JOBchild1 1 emq:{fanin}: JOBparent done"]


def plans_per_second(rounds: int = 5_000) -> float:
    where = Confinement("s0a1b2c3d4e", frozenset({"fanin"}))
    limits = Limits()
    start = time.perf_counter()
    for i in range(rounds):
        plan(LINES[i % len(LINES)], where, limits)
    return round(rounds / (time.perf_counter() - start), 1)


def run(site_url: str, baseline_url: str, seconds: float = 5, connections: int = 50) -> dict[str, Any]:
    cookie = servers.new_cookie(site_url)
    servers.get(site_url, "/api/widgets/fanin/state", cookie)  # lands the fan-in
    status, body = servers.post(site_url, "/api/console", cookie, json.dumps({"command": READ}).encode())
    if status != 200 or json.loads(body)["reply_lines"][0] != '1) "state"':
        raise RuntimeError(f"the console answered {status}: {body[:200]!r}")
    read_body, refused_body = (json.dumps({"command": c}) for c in (READ, REFUSED))
    run_wrk(site_url + "/", "console.lua", 1, connections, 2, [cookie, read_body])  # warm-up
    baseline = run_wrk(baseline_url + "/evalsha", "post.lua", seconds, connections)
    read = run_wrk(site_url + "/", "console.lua", seconds, connections, 2, [cookie, read_body])
    refused = run_wrk(site_url + "/", "console.lua", seconds, connections, 2, [cookie, refused_body])
    return {
        "connections": connections,
        "baseline": baseline,
        "console_read": read,
        "console_refusal": refused,
        "ratio_read": round(read["rps"] / baseline["rps"], 3) if baseline["rps"] else 0.0,
        "plans_per_second": plans_per_second(),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    return servers.main_with_baseline(run, "the console's throughput", 5, argv)


if __name__ == "__main__":
    main()
