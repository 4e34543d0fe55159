"""Reset with 5,000 idle sandboxes present vs none (issue 12): the ratio.

One learner's sandbox is landed through the site (every widget of the
course, as a learner who opened every page). Two resets of it are timed, each through the site as a click
or a form sends it (the app in this process, Starlette's TestClient, on a
real Valkey, as `bench_commands` runs it):

* the instructor's reset of the sandbox, `POST /instructor/reset`
  (`lifecycle.reset_sandboxes`, what `emqlab reset --sandbox` runs too);
* the fan-in widget's own Reset, `POST /api/widgets/fanin/reset`.

First with no other sandbox, then with `crowd` idle sandboxes present. The
crowd is landed cheaply but looks to the reaper like real idle sandboxes: one
template sandbox's widgets land through the real scripts (the site's own
landing), its keys are copied byte for byte (DUMP / RESTORE) under each new
id, and each id is entered in the registry and the held index as admission
enters it, idle for ten minutes (well inside the TTL, so nobody reaps it
mid-run). The crowd's keys are removed afterwards.

    python -m bench.bench_reset [--crowd 5000] [--samples 20]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import redis
from starlette.testclient import TestClient

from server.app import create_app
from server.sandboxes.admission import HELD_KEY
from server.sandboxes.sandbox import REGISTRY_KEY, key_patterns
from server.settings import Settings
from server.widgets import WIDGETS

DIVE = "/flows/parent-and-children"
TOKEN = "bench-reset-token"
TARGET = 1.5  # the bound on crowded / alone
BATCH = 1000  # RESTOREs per pipeline while landing the crowd
WARM_UP = 5  # untimed resets of each kind before each run's samples


@contextmanager
def in_process_site(url: str) -> Iterator[TestClient]:
    settings = dataclasses.replace(Settings.from_env(), instructor_token=TOKEN, rate_limit=0,
                                   address_rate_limit=0, room_rate_limit=0)
    with TestClient(create_app(url, settings)) as client:
        yield client


def landed_sandbox(client: TestClient, widgets: list[str]) -> str:
    """A fresh visitor whose `widgets` landed through the site; its sandbox id."""
    client.cookies.clear()
    client.get(DIVE)
    sandbox = ""
    for name in widgets:
        answer = client.get(f"/api/widgets/{name}/state", headers={"Referer": f"http://testserver{DIVE}"})
        if answer.status_code != 200:
            raise RuntimeError(f"{name} state answered {answer.status_code}: {answer.text[:200]}")
        sandbox = str(answer.json()["snapshot"]["queues"][0]["queue"].split(".")[0])
    return sandbox


def template_keys(valkey: redis.Redis, sandbox: str) -> list[tuple[bytes, bytes]]:
    """Every key of the template sandbox with its DUMP (a setup step: a scan is fine here)."""
    names = [n for p in key_patterns(sandbox) for n in valkey.scan_iter(match=p, count=1000)]
    return [(n, d) for n in names if (d := valkey.dump(n)) is not None]


def crowd_ids(n: int) -> list[str]:
    return [f"sb{i:09d}" for i in range(n)]  # 11 characters, like a real id


def land_crowd(valkey: redis.Redis, template: str, n: int) -> list[bytes]:
    """`n` idle copies of the template sandbox; the names written, for the cleanup."""
    keys = template_keys(valkey, template)
    seen = int((time.time() - 600) * 1000)
    written: list[bytes] = []
    pipe = valkey.pipeline(transaction=False)
    for sandbox in crowd_ids(n):
        for name, dumped in keys:
            copy = name.replace(template.encode(), sandbox.encode())
            pipe.restore(copy, 0, dumped, replace=True)
            written.append(copy)
        pipe.zadd(REGISTRY_KEY, {sandbox: seen})
        pipe.zadd(HELD_KEY, {sandbox: seen}, nx=True)
        if len(pipe) >= BATCH:
            pipe.execute()
    pipe.execute()
    return written


def remove_crowd(valkey: redis.Redis, written: list[bytes], n: int) -> None:
    pipe = valkey.pipeline(transaction=False)
    for start in range(0, len(written), BATCH):
        pipe.delete(*written[start:start + BATCH])
        pipe.execute()
    ids = crowd_ids(n)
    for start in range(0, n, BATCH):
        pipe.zrem(REGISTRY_KEY, *ids[start:start + BATCH])
        pipe.zrem(HELD_KEY, *ids[start:start + BATCH])
    pipe.execute()


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(pct / 100 * (len(ordered) - 1))))]


def timed(client: TestClient, samples: int, path: str, body: dict[str, Any],
          headers: dict[str, str] | None = None) -> dict[str, float]:
    """p50 and p99 (ms) of `samples` POSTs of `path` (after WARM_UP untimed ones)."""
    times = []
    for i in range(WARM_UP + samples):
        start = time.perf_counter()
        answer = client.post(path, json=body, headers=headers or {})
        took = time.perf_counter() - start
        if answer.status_code != 200:
            raise RuntimeError(f"{path} answered {answer.status_code}: {answer.text[:200]}")
        if i >= WARM_UP:
            times.append(took * 1000)
    return {"p50_ms": round(percentile(times, 50), 2), "p99_ms": round(percentile(times, 99), 2)}


def both(client: TestClient, sandbox: str, samples: int) -> dict[str, dict[str, float]]:
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    return {
        "instructor": timed(client, samples, "/instructor/reset", {"sandbox": sandbox}, bearer),
        "widget": timed(client, samples, "/api/widgets/fanin/reset", {}),
    }


def run(url: str, crowd: int = 5000, samples: int = 20) -> dict[str, Any]:
    """The two resets' p50/p99 with no other sandbox and with `crowd` idle ones, and the ratios.

    Returns {"crowd", "samples", "keys_per_idle_sandbox", "target_ratio",
    "alone": {"instructor": {"p50_ms", "p99_ms"}, "widget": {…}},
    "crowded": {same}, "ratio": {"instructor": {"p50", "p99"}, "widget": {…}}}.
    """
    valkey = redis.Redis.from_url(url)
    widgets = list(WIDGETS)
    written: list[bytes] = []
    try:
        with in_process_site(url) as client:
            template = landed_sandbox(client, widgets)
            learner = landed_sandbox(client, widgets)
            alone = both(client, learner, samples)
            written = land_crowd(valkey, template, crowd)
            crowded = both(client, learner, samples)
    finally:
        remove_crowd(valkey, written, crowd)
        valkey.close()
    ratio = {kind: {p: round(crowded[kind][f"{p}_ms"] / max(alone[kind][f"{p}_ms"], 1e-9), 2)
                    for p in ("p50", "p99")} for kind in alone}
    return {"crowd": crowd, "samples": samples, "keys_per_idle_sandbox": len(written) // max(crowd, 1),
            "target_ratio": TARGET, "alone": alone, "crowded": crowded, "ratio": ratio}


def main(argv: list[str] | None = None) -> int:
    from server.valkey.process import ValkeyProcess

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--crowd", type=int, default=5000, help="idle sandboxes present in the crowded run")
    parser.add_argument("--samples", type=int, default=20, help="resets timed per kind and run")
    args = parser.parse_args(argv)
    with ValkeyProcess() as valkey:
        print(json.dumps(run(valkey.url, args.crowd, args.samples), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
