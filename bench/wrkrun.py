"""wrk, Debian's, with one of bench/wrk/*.lua: every HTTP load of the benchmarks.

Each script writes its own Host header and counts every answer by status;
`done` prints one line, WRKJSON {...}, parsed here. A load that runs beside
a measurement (`Wrk`) is started, then stopped with SIGINT, on which wrk
stops and still prints its summary.
"""

from __future__ import annotations

import json
import resource
import shutil
import signal
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

WRK_DIR = Path(__file__).resolve().parent / "wrk"


def raise_fd_limit(wanted: int = 65536) -> None:
    """Thousands of connections on each side: wrk and the servers inherit this process's limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < min(wanted, hard):
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(wanted, hard), hard))


def wrk_binary() -> str:
    found = shutil.which("wrk")
    if not found:
        raise RuntimeError("wrk not found: `make bench` installs Debian's wrk")
    return found


class Wrk:
    """``with Wrk(url, script, seconds, ...) as load: ...``; ``load.result`` afterwards. wrk allocates
    its latency histogram by `timeout` (8 bytes a microsecond): held streams take "1s"."""

    def __init__(self, url: str, script: str, seconds: float = 3600, connections: int = 50, threads: int = 2,
                 args: list[str] | None = None, timeout: str = "10s") -> None:
        self.seconds = max(1, round(seconds))
        threads = max(1, min(threads, connections))
        self.command = [wrk_binary(), "-t", str(threads), "-c", str(connections), "-d", f"{self.seconds}s",
                        "--timeout", timeout, "-s", str(WRK_DIR / script), url, "--", *(args or [])]
        self.connections, self.threads = connections, threads
        self.proc: subprocess.Popen[str] | None = None
        self.result: dict[str, Any] = {}

    def __enter__(self) -> Wrk:
        raise_fd_limit()
        self.proc = subprocess.Popen(self.command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        return self

    def __exit__(self, *exc: object) -> None:
        self.finish(stop=True)

    def finish(self, stop: bool = False) -> dict[str, Any]:
        """Its summary: at once (`stop`, SIGINT), or once its time is up."""
        assert self.proc is not None
        if self.result:
            return self.result
        if stop and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        out, err = self.proc.communicate(timeout=self.seconds + 60)
        line = next((row for row in out.splitlines() if row.startswith("WRKJSON ")), None)
        if line is None:
            raise RuntimeError(f"wrk failed ({self.proc.returncode}): {out[-400:]} {err[-400:]}")
        self.result = parse(json.loads(line[len("WRKJSON "):]), self.connections, self.threads)
        return self.result


def parse(raw: dict[str, Any], connections: int, threads: int) -> dict[str, Any]:
    seconds = raw["duration_us"] / 1e6
    codes: dict[str, int] = raw.get("codes", {})
    return {
        "requests": raw["requests"], "seconds": round(seconds, 2), "bytes": raw["bytes"],
        "rps": round(raw["requests"] / seconds, 1) if seconds else 0.0,
        "latency_ms": {k: round(raw["latency_us"][k] / 1000, 2) for k in ("mean", "p50", "p90", "p99", "max")},
        "errors": raw["errors"], "status_codes": codes,
        # every answer outside 2xx (wrk's own "status" error counts only >= 400)
        "non_2xx": sum(n for code, n in codes.items() if not code.startswith("2")),
        "connections": connections, "threads": threads,
    }


def run_wrk(url: str, script: str, seconds: float, connections: int = 50, threads: int = 2,
            args: list[str] | None = None) -> dict[str, Any]:
    """wrk for `seconds`: requests/s, latency (ms), errors and answers by status."""
    with Wrk(url, script, seconds, connections, threads, args) as load:
        return load.finish()


def combined(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Several runs of one load as one: counts summed (requests/s over the
    whole time); latency the median run's, with the worst p99 and max."""
    if len(runs) == 1:
        return runs[0]
    seconds, requests = sum(r["seconds"] for r in runs), sum(r["requests"] for r in runs)

    def summed(key: str) -> dict[str, int]:
        found: Counter[str] = Counter()
        for run in runs:
            found.update(run[key])  # update, not +: a count of 0 stays in the table
        return dict(found)

    middle = sorted(runs, key=lambda r: r["rps"])[len(runs) // 2]["latency_ms"]
    return {**runs[0], "requests": requests, "seconds": round(seconds, 2),
            "rps": round(requests / seconds, 1) if seconds else 0.0,
            "latency_ms": {**middle, **{k: max(r["latency_ms"][k] for r in runs) for k in ("p99", "max")}},
            "errors": summed("errors"), "status_codes": summed("status_codes"),
            "non_2xx": sum(r["non_2xx"] for r in runs), "runs": len(runs)}


def socket_errors(w: dict[str, Any], timeouts: bool = True) -> int:
    """Connect, read, write and timeout errors (wrk's "status" is counted by status instead). A held
    stream never completes, so its timeouts are no error (`timeouts=False`)."""
    return sum(n for k, n in w["errors"].items() if k != "status" and (timeouts or k != "timeout"))
