"""The cluster figure — action throughput on a managed 3-primary Valkey
Cluster, with 1 and 2 uvicorn workers.

The same wrk mix as figure 1 (`bench/wrk/actions.lua`: per sandbox, `reset`
then three `complete-child` on the fan-in), against the site started the way
`emqlab serve --cluster --workers N` starts it (EMQLAB_VALKEY_CLUSTER=1, so
every widget talks through redis-py's RedisCluster). Beside each run, in the
same run: the one-EVALSHA baseline app (`bench/baseline_app.py`) on the same
cluster with the same number of workers (its client is a RedisCluster too),
and the ratio. For reference, the site with 1 worker on one valkey-server.

    python -m bench.bench_cluster [--seconds 10]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import servers
from bench.bench_actions import preflight
from bench.wrkrun import run_wrk
from server.valkey.process import ValkeyCluster, ValkeyProcess

PRIMARIES = 3
WORKERS = (1, 2)
CLUSTER_ENV = {"EMQLAB_VALKEY_CLUSTER": "1"}


def measure(site: servers.Served, base: servers.Served, seconds: float, connections: int, sandboxes: int,
            threads: int) -> dict[str, Any]:
    """The baseline, then the site's mix, each after a 1 s warm-up."""
    cookies = servers.cookies(site.url, sandboxes)
    preflight(site.url, cookies[0])
    with tempfile.NamedTemporaryFile("w", suffix=".cookies", prefix="emqlab-bench-", delete=False) as handle:
        handle.write("\n".join(cookies))
    settle = 1.0 if seconds >= 5 else 0.3
    try:
        run_wrk(base.url + "/evalsha", "post.lua", 1, connections, threads)
        run_wrk(site.url + "/", "actions.lua", 1, connections, threads, [handle.name, str(threads)])
        time.sleep(settle)
        baseline = run_wrk(base.url + "/evalsha", "post.lua", seconds, connections, threads)
        time.sleep(settle)
        mix = run_wrk(site.url + "/", "actions.lua", seconds, connections, threads, [handle.name, str(threads)])
        time.sleep(settle)
    finally:
        Path(handle.name).unlink(missing_ok=True)
    return {
        "baseline": baseline,
        "site_mix": mix,
        "ratio": round(mix["rps"] / baseline["rps"], 3) if baseline["rps"] else 0.0,
        "site_errors": site.tracebacks(),
    }


def run(seconds: float = 10, connections: int = 50, sandboxes: int = 200, threads: int = 2,
        single_reference: bool = True) -> dict[str, Any]:
    result: dict[str, Any] = {
        "primaries": PRIMARIES, "connections": connections, "sandboxes": sandboxes,
        "mix": "1 reset : 3 complete-child per sandbox", "workers": {},
    }
    with ValkeyCluster(PRIMARIES) as cluster:
        for workers in WORKERS:
            with servers.serve_site(cluster.url, workers=workers, **CLUSTER_ENV) as site, \
                    servers.serve_baseline(cluster.url, workers=workers, **CLUSTER_ENV) as base:
                result["workers"][str(workers)] = measure(site, base, seconds, connections, sandboxes, threads)
    if single_reference:
        with ValkeyProcess() as valkey, servers.serve_site(valkey.url) as site, \
                servers.serve_baseline(valkey.url) as base:
            result["single_server_1_worker"] = measure(site, base, seconds, connections, sandboxes, threads)
    one, two = (result["workers"][str(n)]["site_mix"]["rps"] for n in WORKERS)
    result["scaling_2_over_1"] = round(two / one, 2) if one else 0.0
    return result


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description="action throughput on a 3-primary cluster, 1 and 2 workers")
    parser.add_argument("--seconds", type=float, default=10)
    args = parser.parse_args(argv)
    result = run(args.seconds)
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
