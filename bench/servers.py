"""The processes a benchmark runs against, and what a visitor's first requests
to the site give it (a cookie, the page's widgets and stream).

Every bench server, and the test suite's live site, is an app factory run the
way `emqlab serve` runs the site (`python -m bench.servers FACTORY --port P
[--workers N]`: `server.listen.run_uvicorn`, proxy headers off, TCP_NODELAY kept
on the workers' connections), with the access log off. The site runs with its
rate limits off, so a benchmark measures the work, not the limiter, except
where the limiter is what it measures (``serve_site(limits=True)``: fairness).
`make reliability` starts `emqlab serve` itself through `launch`.
"""

from __future__ import annotations

import argparse
import contextlib
import http.cookies
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from server.sandboxes.sandbox import COOKIE, SandboxCookie
from server.valkey.process import free_port

ROOT = Path(__file__).resolve().parent.parent
DIVE = "/flows/parent-and-children"
STATIC = "/static/site.css"
BENCH_SECRET = "emqlab-bench-secret"  # the bench site signs cookies with it, so the bench reads their sandbox ids
# The site's rate limits, off unless a benchmark measures them (fairness).
# the fan-out holds 1,000 streams on one visitor's sandbox: the per-visitor stream cap is lifted too
NO_RATE_LIMITS = {"EMQLAB_RATE_LIMIT": "0", "EMQLAB_READ_LIMIT": "0", "EMQLAB_ADDRESS_RATE_LIMIT": "0",
                  "EMQLAB_STREAMS_PER_VISITOR": "0"}


@dataclass
class Served:
    """One server process (and its workers: its own process group) on a port; its log in a scratch directory."""

    url: str
    proc: subprocess.Popen[bytes]
    name: str
    log: Path
    stop_signal: signal.Signals = signal.SIGTERM

    @property
    def port(self) -> int:
        return int(urlsplit(self.url).port or 80)  # every bench server listens on 127.0.0.1

    def tracebacks(self) -> int:
        """Unhandled errors the server logged so far (reported, never hidden)."""
        return self.log.read_text(errors="replace").count("Traceback (most recent call last)") \
            if self.log.exists() else 0

    def rss_mb(self, field_name: str = "VmRSS") -> float:
        """The server process's VmRSS (or its peak, VmHWM), in MB, from /proc."""
        lines = Path(f"/proc/{self.proc.pid}/status").read_text().splitlines()
        return next((round(int(x.split()[1]) / 1024, 1) for x in lines if x.startswith(field_name + ":")), 0.0)

    def cpu_seconds(self) -> float:
        """CPU seconds of the server and its workers (its process group)."""
        ticks = 0
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue  # a process that ended meanwhile
            if int(fields[2]) == self.proc.pid:
                ticks += int(fields[11]) + int(fields[12])
        return ticks / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        """`stop_signal` (SIGTERM to the group; SIGINT to the process: an operator's Ctrl-C), then
        SIGKILL to whatever of the group is left, so a worker whose supervisor died first goes too."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                if self.stop_signal == signal.SIGINT:
                    self.proc.send_signal(signal.SIGINT)
                else:
                    os.killpg(self.proc.pid, self.stop_signal)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        if self.tracebacks():
            print(f"{self.name}: {self.tracebacks()} unhandled errors:\n{self.log.read_text()[-3000:]}")
        shutil.rmtree(self.log.parent, ignore_errors=True)

    def __enter__(self) -> Served:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def launch(command: list[str], name: str, env: dict[str, str], url: str, ready_path: str, log: Path | None = None,
           cwd: Path = ROOT, within: float = 30, stop_signal: signal.Signals = signal.SIGTERM) -> Served:
    """Start `command` in a process group of its own and wait until `ready_path` answers 200."""
    log = log or Path(tempfile.mkdtemp(prefix="emqlab-bench-")) / f"{name}.log"
    with log.open("ab") as out:
        proc = subprocess.Popen(command, env=env, cwd=str(cwd), stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    served = Served(url, proc, name, log, stop_signal)
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited early with {proc.returncode}: {log.read_text()[-1500:]}")
        with contextlib.suppress(OSError):
            if fetch(url, ready_path)[0] == 200:
                return served
        time.sleep(0.1)
    served.stop()
    raise RuntimeError(f"{name} did not answer within {within:.0f} s")


def uvicorn_command(factory: str, port: int, workers: int = 1) -> list[str]:
    """The argv that serves ``factory`` on 127.0.0.1:``port`` as `emqlab serve` would (benches, tests/support)."""
    return [sys.executable, "-m", "bench.servers", factory, "--port", str(port), "--workers", str(workers)]


def serve(factory: str, valkey_url: str, ready_path: str, name: str, extra_env: dict[str, str] | None = None,
          workers: int = 1) -> Served:
    port = free_port()
    env = {**os.environ, "EMQLAB_VALKEY_URL": valkey_url, **(extra_env or {})}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)  # the repository first
    return launch(uvicorn_command(factory, port, workers), name, env, f"http://127.0.0.1:{port}", ready_path)


def serve_site(valkey_url: str, workers: int = 1, limits: bool = False, env: dict[str, str] | None = None) -> Served:
    """The site; `limits`: with its default rate limits (per visitor, address,
    class); `env`: settings of its own (EMQLAB_… variables)."""
    env = {**({} if limits else NO_RATE_LIMITS), "EMQLAB_ADDRESS_SANDBOXES": "0",
           "EMQLAB_DATA_DIR": tempfile.mkdtemp(prefix="emqlab-bench-"),
           "EMQLAB_MAX_SANDBOXES": "100000", "EMQLAB_SECRET": BENCH_SECRET, **(env or {})}
    return serve("server.cli:app_from_env", valkey_url, DIVE, "site", env, workers)


def serve_baseline(valkey_url: str, workers: int = 1, env: dict[str, str] | None = None) -> Served:
    return serve("bench.baseline_app:app_from_env", valkey_url, "/health", "baseline", env, workers)


def fetch(url: str, path: str, cookie: str | None = None, body: bytes | None = None) -> tuple[int, bytes]:
    """GET `path`, or POST `body` as JSON; (status, body), whatever the status."""
    headers = {"Content-Type": "application/json"} if body is not None else {}
    if cookie:
        headers["Cookie"] = f"{COOKIE}={cookie}"
    request = urllib.request.Request(url + path, data=body, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def post(url: str, path: str, cookie: str) -> tuple[int, bytes]:
    """One click: POST "{}" as the visitor with this cookie."""
    return fetch(url, path, cookie, b"{}")


def new_cookie(site_url: str, path: str = DIVE) -> str:
    """A sandbox cookie value, as a first visit to a page gets it."""
    with urllib.request.urlopen(site_url + path, timeout=10) as response:
        for header in response.headers.get_all("set-cookie") or []:
            jar: http.cookies.SimpleCookie = http.cookies.SimpleCookie()
            jar.load(header)
            if COOKIE in jar:
                return jar[COOKIE].value
    raise RuntimeError(f"{path} set no {COOKIE} cookie")


def sandbox_of(cookie_value: str) -> str:
    """The sandbox id inside a cookie, read with the secret the bench gave the site."""
    return SandboxCookie(BENCH_SECRET).parse(cookie_value)


def land(site_url: str, cookie: str, widgets: list[str]) -> None:
    """Each widget's state read as this visitor: the first read of a widget lands its scenario."""
    for name in widgets:
        status, body = fetch(site_url, f"/api/widgets/{name}/state", cookie)
        if status != 200:
            raise RuntimeError(f"{name}'s state answered {status}: {body[:200]!r}")


def page_widgets(site_url: str, path: str = DIVE) -> list[str]:
    """The widgets a page shows, in its order: what it names in its one stream (`/api/stream?widgets=…`)."""
    from server.widgets import WIDGETS

    status, body = fetch(site_url, path)
    if status != 200:
        raise RuntimeError(f"{path} answered {status}")
    found = re.findall(r'data-widget="([a-z0-9-]+)"', body.decode("utf-8", "replace"))
    return [name for name in dict.fromkeys(found) if name in WIDGETS]


def page_stream(site_url: str, path: str = DIVE) -> str:
    """The stream a page opens: every widget it shows."""
    return "/api/stream?widgets=" + ",".join(page_widgets(site_url, path))


def lines_file(lines: list[str]) -> str:
    """A temporary file of these lines, for wrk's scripts (the caller removes it)."""
    with tempfile.NamedTemporaryFile("w", suffix=".txt", prefix="emqlab-bench-", delete=False) as handle:
        handle.write("\n".join(lines) + "\n")
    return handle.name


if __name__ == "__main__":  # `uvicorn_command`'s process
    from server.listen import run_uvicorn

    parser = argparse.ArgumentParser()
    parser.add_argument("factory")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    run_uvicorn(args.factory, "127.0.0.1", args.port, args.workers, "warning", access_log=False)
