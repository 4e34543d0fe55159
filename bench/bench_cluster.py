"""The cluster figure — action throughput on a managed 3-primary Valkey
Cluster, with 1 and 2 uvicorn workers.

The same wrk mix as the throughput figure (`bench/wrk/actions.lua`: per sandbox, `reset`
then three `complete-child` on the fan-in), against the site started the way
`emqlab serve --cluster --workers N` starts it (EMQLAB_VALKEY_CLUSTER=1, so
every widget talks through redis-py's RedisCluster). Beside each run, in the
same run: the one-EVALSHA baseline app (`bench/baseline_app.py`) on the same
cluster with the same number of workers (its client is a RedisCluster too),
and the ratio.
"""

from __future__ import annotations

from typing import Any

from bench import bench_actions, servers
from server.valkey.process import ValkeyCluster

PRIMARIES = 3
WORKERS = (1, 2)
CLUSTER_ENV = {"EMQLAB_VALKEY_CLUSTER": "1"}


def measure(site: servers.Served, base: servers.Served, seconds: float, connections: int, sandboxes: int,
            threads: int) -> dict[str, Any]:
    """The throughput measurement (bench_actions) on this site and baseline, and the site's logged errors."""
    found = bench_actions.run(site.url, base.url, seconds, connections, sandboxes, threads)
    return {"baseline": found["baseline"], "site_mix": found["site_mix"], "ratio": found["ratio"],
            "site_errors": site.tracebacks()}


def run(seconds: float = 10, connections: int = 50, sandboxes: int = 200, threads: int = 2) -> dict[str, Any]:
    result: dict[str, Any] = {
        "primaries": PRIMARIES, "connections": connections, "sandboxes": sandboxes,
        "mix": bench_actions.MIX, "workers": {},
    }
    with ValkeyCluster(PRIMARIES) as cluster:
        for workers in WORKERS:
            with servers.serve_site(cluster.url, workers=workers, env=CLUSTER_ENV) as site, \
                    servers.serve_baseline(cluster.url, workers=workers, **CLUSTER_ENV) as base:
                result["workers"][str(workers)] = measure(site, base, seconds, connections, sandboxes, threads)
    one, two = (result["workers"][str(n)]["site_mix"]["rps"] for n in WORKERS)
    result["scaling_2_over_1"] = round(two / one, 2) if one else 0.0
    return result
