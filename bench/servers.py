"""The processes a benchmark runs against: the site and the baseline app,
each under uvicorn as `emqlab serve` runs the site (bench/uvicorn_workers.py),
no access log. The site runs with its rate limits off, so a benchmark
measures the work, not the limiter, except where the limiter is what it
measures (``serve_site(limits=True)``: fairness).
"""

from __future__ import annotations

import contextlib
import http.cookies
import importlib.util
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from bench import uvicorn_workers
from server.sandboxes.sandbox import COOKIE, SandboxCookie
from server.valkey.process import free_port

ROOT = Path(__file__).resolve().parent.parent
SITE_FACTORY = "server.cli:app_from_env"
BASELINE_FACTORY = "bench.baseline_app:app_from_env"
DIVE = "/flows/parent-and-children"
STATIC = "/static/site.css"

# The bench site signs cookies with this, so the bench can read its sandbox ids.
BENCH_SECRET = "emqlab-bench-secret"


def uvicorn_flavour() -> dict[str, str]:
    """What uvicorn's "auto" picks in this environment (same for both apps)."""
    return {
        "loop": "uvloop" if importlib.util.find_spec("uvloop") else "asyncio",
        "http": "httptools" if importlib.util.find_spec("httptools") else "h11",
    }


@dataclass
class Served:
    """One uvicorn process serving one app on a free port."""

    url: str
    proc: subprocess.Popen[bytes]
    name: str
    env: dict[str, str] = field(default_factory=dict)
    log: Path | None = None

    def tracebacks(self) -> int:
        """Unhandled errors the server logged so far (reported, never hidden)."""
        if not self.log or not self.log.exists():
            return 0
        return self.log.read_text(errors="replace").count("Traceback (most recent call last)")

    @property
    def host(self) -> str:
        return urlsplit(self.url).hostname or "127.0.0.1"

    @property
    def port(self) -> int:
        return int(urlsplit(self.url).port or 80)

    def status_kb(self, field_name: str) -> int:
        """VmRSS / VmHWM of the server process, in kB, from /proc."""
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith(field_name + ":"):
                return int(line.split()[1])
        return 0

    def rss_mb(self) -> float:
        return round(self.status_kb("VmRSS") / 1024, 1)

    def hwm_mb(self) -> float:
        return round(self.status_kb("VmHWM") / 1024, 1)

    def cpu_seconds(self) -> float:
        """CPU seconds of the server and its workers (its process group: start_new_session)."""
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
        """The server and every worker: their process group, so a worker whose supervisor died first goes too."""
        if self.proc.poll() is None:
            self._signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._signal(signal.SIGKILL)
                self.proc.wait(timeout=5)
        self._signal(signal.SIGKILL)  # whatever of the group is still there
        if self.log is not None and self.tracebacks():
            print(f"{self.name}: {self.tracebacks()} unhandled errors:\n{self.log.read_text()[-3000:]}")
        if self.log is not None:
            shutil.rmtree(self.log.parent, ignore_errors=True)

    def _signal(self, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, sig)

    def __enter__(self) -> Served:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This environment for a bench child process, `extra` added, the repository first on PYTHONPATH."""
    env = {**os.environ, **(extra or {})}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return env


def serve(factory: str, valkey_url: str, ready_path: str, name: str, extra_env: dict[str, str] | None = None,
          workers: int = 1) -> Served:
    """Start ``factory`` under uvicorn (``workers`` workers, 1 by default) and
    wait until ``ready_path`` answers 200."""
    port = free_port()
    log = Path(tempfile.mkdtemp(prefix="emqlab-bench-")) / f"{name}.log"
    env = child_env({"EMQLAB_VALKEY_URL": valkey_url, **(extra_env or {})})
    # as `emqlab serve [--workers N]` runs them (server.cli.run_uvicorn: proxy
    # headers off, TCP_NODELAY kept with N workers), with the access log off
    with log.open("wb") as out:
        proc = subprocess.Popen(
            uvicorn_workers.command(factory, port, workers),
            env=env, cwd=str(ROOT), stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: `Served.stop` ends its workers with it
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited early with {proc.returncode}: {log.read_text()[-1500:]}")
        try:
            with urllib.request.urlopen(url + ready_path, timeout=1) as response:
                if response.status == 200:
                    return Served(url, proc, name, extra_env or {}, log)
        except OSError:
            time.sleep(0.1)
    Served(url, proc, name, extra_env or {}, log).stop()
    raise RuntimeError(f"{name} did not answer within 30 s")


# The site's rate limits, off unless a benchmark measures them (fairness):
# the other figures measure the work, not the limiter.
NO_RATE_LIMITS = {"EMQLAB_RATE_LIMIT": "0", "EMQLAB_READ_LIMIT": "0", "EMQLAB_ADDRESS_RATE_LIMIT": "0"}


def serve_site(valkey_url: str, workers: int = 1, limits: bool = False, env: dict[str, str] | None = None,
               **extra: str) -> Served:
    """The site; `limits`: with its default rate limits (per visitor, address,
    class); `env` and `extra`: settings of its own (EMQLAB_… variables)."""
    env = {**({} if limits else NO_RATE_LIMITS), "EMQLAB_ADDRESS_SANDBOXES": "0",
           "EMQLAB_DATA_DIR": tempfile.mkdtemp(prefix="emqlab-bench-"),
           "EMQLAB_MAX_SANDBOXES": "100000", "EMQLAB_SECRET": BENCH_SECRET, **(env or {}), **extra}
    return serve(SITE_FACTORY, valkey_url, DIVE, "site", env, workers)


def serve_baseline(valkey_url: str, workers: int = 1, **extra: str) -> Served:
    return serve(BASELINE_FACTORY, valkey_url, "/health", "baseline", extra, workers)


def new_cookie(site_url: str, path: str = DIVE) -> str:
    """A sandbox cookie value, as a first visit to a page gets it."""
    with urllib.request.urlopen(site_url + path, timeout=10) as response:
        for header in response.headers.get_all("set-cookie") or []:
            jar: http.cookies.SimpleCookie = http.cookies.SimpleCookie()
            jar.load(header)
            if COOKIE in jar:
                return jar[COOKIE].value
    raise RuntimeError(f"{path} set no {COOKIE} cookie")


def page_widgets(site_url: str, path: str = DIVE) -> list[str]:
    """The widgets a page shows, in its order: what its lab.js registers and
    names in its one stream (`/api/stream?widgets=…`)."""
    from server.widgets import WIDGETS

    status, body = get(site_url, path)
    if status != 200:
        raise RuntimeError(f"{path} answered {status}")
    found = re.findall(r'data-widget="([a-z0-9-]+)"', body.decode("utf-8", "replace"))
    return [name for name in dict.fromkeys(found) if name in WIDGETS]


def page_stream(site_url: str, path: str = DIVE) -> str:
    """The stream a page opens: every widget it shows."""
    return "/api/stream?widgets=" + ",".join(page_widgets(site_url, path))


def cookies(site_url: str, count: int) -> list[str]:
    return [new_cookie(site_url) for _ in range(count)]


def cookie_header(value: str) -> str:
    return f"{COOKIE}={value}"


def sandbox_of(cookie_value: str) -> str:
    """The sandbox id inside a cookie, read with the secret the bench gave the site."""
    return SandboxCookie(BENCH_SECRET).parse(cookie_value)


def post(url: str, path: str, cookie_value: str, body: bytes = b"{}") -> tuple[int, bytes]:
    request = urllib.request.Request(
        url + path, data=body, method="POST",
        headers={"Content-Type": "application/json", "Cookie": cookie_header(cookie_value)},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def get(url: str, path: str, cookie_value: str | None = None) -> tuple[int, bytes]:
    headers = {"Cookie": cookie_header(cookie_value)} if cookie_value else {}
    request = urllib.request.Request(url + path, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def lines_file(lines: list[str]) -> str:
    """A temporary file of these lines, for wrk's scripts (the caller removes it)."""
    with tempfile.NamedTemporaryFile("w", suffix=".txt", prefix="emqlab-bench-", delete=False) as handle:
        handle.write("\n".join(lines) + "\n")
    return handle.name
