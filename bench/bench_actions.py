"""Figure 1 — action throughput: "Complete child" requests per second at 50
concurrent connections, against a minimal Starlette endpoint running one
EVALSHA on the same Valkey, in the same run.

A sandbox holds one fan-in flow of three children, so "Complete child" runs
out after three clicks. wrk (bench/wrk/actions.lua) therefore walks a pool of
sandboxes (cookies from first visits to a dive page): per sandbox, `reset`
(lands the flow again through the real scripts) then three `complete-child`
(claim + complete + the snapshot of the real keys in the answer). The measured
mix is 1 reset : 3 complete-child; a reset-only run prices the reset share,
from which the complete-child-only rate is derived (requests on one worker
are CPU-bound, so costs add). A last run repeats the mix with one live SSE
stream open per sandbox, as a learner's page has it, so every action's
snapshot is also streamed.

    python -m bench.bench_actions [--seconds 10]
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import servers
from bench.background import Background
from bench.wrkrun import run_wrk


def preflight(site_url: str, cookie: str) -> None:
    """The sequence wrk sends does what it says (answers, not timings)."""
    expected = ["Reset", "Completed JOBchild1", "Completed JOBchild2", "Completed JOBchild3"]
    for action, text in zip(["reset", "complete-child", "complete-child", "complete-child"], expected):
        status, body = servers.post(site_url, f"/api/widgets/fanin/{action}", cookie)
        answer = json.loads(body)
        if status != 200 or not answer["outcome"]["text"].startswith(text):
            raise RuntimeError(f"{action} answered {status}: {answer}")


def derived_complete_child(mix_rps: float, reset_rps: float) -> float:
    """complete-child-only rate from the 1:3 mix and the reset-only rate."""
    if mix_rps <= 0 or reset_rps <= 0:
        return 0.0
    per_cc = (1 / mix_rps - 0.25 / reset_rps) / 0.75
    return round(1 / per_cc, 1) if per_cc > 0 else 0.0


def run(site_url: str, baseline_url: str, seconds: float = 10, connections: int = 50,
        sandboxes: int = 200, threads: int = 2, with_streams: bool = True) -> dict[str, Any]:
    cookies = servers.cookies(site_url, sandboxes)
    preflight(site_url, cookies[0])
    with tempfile.NamedTemporaryFile("w", suffix=".cookies", prefix="emqlab-bench-", delete=False) as handle:
        handle.write("\n".join(cookies))
    cookie_file = handle.name
    settle = 1.0 if seconds >= 5 else 0.3
    try:
        # warm-up (scripts loaded, pools filled, code paths hot), not reported
        run_wrk(baseline_url + "/evalsha", "post.lua", 1, connections, threads)
        run_wrk(site_url + "/", "actions.lua", 1, connections, threads, [cookie_file, str(threads)])
        time.sleep(settle)
        baseline = run_wrk(baseline_url + "/evalsha", "post.lua", seconds, connections, threads)
        time.sleep(settle)
        mix = run_wrk(site_url + "/", "actions.lua", seconds, connections, threads, [cookie_file, str(threads)])
        # let the requests wrk left in flight finish before the next pass resets those sandboxes
        time.sleep(settle)
        resets = run_wrk(site_url + "/", "actions.lua", max(1, seconds / 2), connections, threads,
                         [cookie_file, str(threads), "fanin", "reset"])
        time.sleep(settle)
        streamed: dict[str, Any] | None = None
        held: dict[str, Any] = {}
        if with_streams:
            with Background(site_url, cookies, rate=0, streams=True) as hold:
                streamed = run_wrk(site_url + "/", "actions.lua", seconds, connections, threads,
                                   [cookie_file, str(threads)])
                time.sleep(settle)
            held = hold.result
    finally:
        Path(cookie_file).unlink(missing_ok=True)
    cc = derived_complete_child(mix["rps"], resets["rps"])
    result: dict[str, Any] = {
        "connections": connections,
        "sandboxes": sandboxes,
        "mix": "1 reset : 3 complete-child per sandbox",
        "baseline": baseline,
        "site_mix": mix,
        "site_reset_only": resets,
        "complete_child_rps_derived": cc,
        "ratio_mix": round(mix["rps"] / baseline["rps"], 3) if baseline["rps"] else 0.0,
        "ratio_complete_child": round(cc / baseline["rps"], 3) if baseline["rps"] else 0.0,
    }
    if streamed is not None:
        result["site_mix_with_streams"] = streamed
        result["streams_held"] = held
        result["ratio_mix_with_streams"] = round(streamed["rps"] / baseline["rps"], 3) if baseline["rps"] else 0.0
    return result


def main(argv: list[str] | None = None) -> dict[str, Any]:
    return servers.main_with_baseline(run, "figure 1: action throughput", 10, argv)


if __name__ == "__main__":
    main()
