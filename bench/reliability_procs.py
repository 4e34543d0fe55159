"""The processes a scenario of `make reliability` runs and watches:
`emqlab serve` as an operator runs it (a data directory, its output in a
file, Ctrl-C to stop), the `emqlab` command from a shell, the process table
read from /proc, and a page's stream followed as a browser follows it."""

from __future__ import annotations

import asyncio
import atexit
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import redis

from bench import rawhttp
from bench.reliability_drive import ROOT, TOKEN, status_of, wait_for
from server.valkey.process import free_port

# Variables of this machine that would point a scenario's site elsewhere.
UNSET = ("EMQLAB_VALKEY_URL", "EMQLAB_VALKEY_CLUSTER", "EMQLAB_DATA_DIR", "EMQLAB_EPHEMERAL", "EMQLAB_SECRET",
         "EMQLAB_INSTRUCTOR_TOKEN")


def children(pid: int) -> list[int]:
    """Processes whose parent is `pid`, read from /proc."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def command_of(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def state_of(pid: int) -> str | None:
    """The process's state letter (R, S, Z…), None once it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("State:"):
                return line.split()[1]
    except OSError:
        return None
    return None


def scratch(name: str) -> Path:
    """A folder of the scenario's own (data directories, logs), removed when the run ends."""
    folder = Path(tempfile.mkdtemp(prefix=f"emqlab-rel-{name}-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


def others() -> dict[str, int]:
    """Other work on the machine as a run starts (other suites, benchmarks), by what its command runs."""
    found = {"pytest": 0, "valkey-server": 0, "chromium": 0, "wrk": 0, "emqlab serve": 0}
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            command = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        for name, mark in (("pytest", "pytest"), ("valkey-server", "valkey-server"), ("chromium", "chromium"),
                           ("wrk", "wrk "), ("emqlab serve", "server.cli serve")):
            found[name] += mark in command.split(" --", 1)[0] or command.startswith(mark)
    return found


class Serve:
    """`python -m server.cli serve` on a free port and a data directory; its output kept in files."""

    def __init__(self, workdir: Path, *flags: str, data_dir: Path | None = None, env: dict[str, str] | None = None,
                 preexec: Callable[[], None] | None = None) -> None:
        self.port = free_port()
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        self.data_dir = data_dir or workdir / "data"
        self.argv = [sys.executable, "-m", "server.cli", "serve", "--port", str(self.port), *flags,
                     "--data-dir", str(self.data_dir)]
        self.env = {k: v for k, v in os.environ.items() if k not in UNSET}
        # the old state folder of this scenario, never the machine's (its secret would be moved in)
        self.env.update({"PYTHONPATH": str(ROOT), "EMQLAB_STATE_DIR": str(workdir / "state"),
                         "EMQLAB_INSTRUCTOR_TOKEN": TOKEN, **(env or {})})
        self.log = workdir / f"serve-{self.port}.log"
        self.preexec = preexec
        self.proc: subprocess.Popen[bytes] | None = None
        self.took = 0.0  # seconds from launch to the first page served

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def launch(self) -> subprocess.Popen[bytes]:
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(self.argv, cwd=self.workdir, env=self.env, stdout=log, stderr=log,
                                         stdin=subprocess.DEVNULL,
                                         preexec_fn=self.preexec)  # noqa: PLW1509 -- a setrlimit, nothing that locks
        return self.proc

    def start(self, timeout: float = 60.0) -> Serve:
        started = time.monotonic()
        proc = self.launch()

        def answering() -> bool:
            if proc.poll() is not None:
                raise RuntimeError(f"emqlab serve exited with {proc.returncode}: {self.said()[-600:]}")
            return status_of(lambda: httpx.get(self.url + "/", timeout=2)) == 200

        if wait_for(answering, timeout)[0] is None:
            self.stop()
            raise RuntimeError(f"emqlab serve did not answer within {timeout} s: {self.said()[-600:]}")
        self.took = round(time.monotonic() - started, 2)
        return self

    def said(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def running(self) -> dict[str, Any]:
        return dict(json.loads((self.data_dir / "running.json").read_text()))

    def redis(self) -> redis.Redis:
        return redis.Redis.from_url(self.running()["url"], decode_responses=True)

    def valkeys(self) -> list[int]:
        return [pid for pid in children(self.proc.pid) if "valkey-server" in command_of(pid)] if self.proc else []

    def stop(self) -> int:
        """Ctrl-C, as a terminal sends it; its exit status (-9 when it had to be killed)."""
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        return self.proc.returncode

    def __enter__(self) -> Serve:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def emqlab(*args: str, cwd: Path = ROOT, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The `emqlab` command (reset, …) run from a shell; its exit status and output."""
    base = {k: v for k, v in os.environ.items() if k not in UNSET}
    return subprocess.run([sys.executable, "-m", "server.cli", *args], capture_output=True, text=True, check=False,
                          timeout=60, cwd=cwd, env={**base, "PYTHONPATH": str(ROOT), **(env or {})})


class Watch:
    """A page's stream, read in a thread of its own as a browser's EventSource
    reads it: when it ends, it opens again after the `retry: 1000` the site
    sends. `events` holds (event, data, monotonic time) of every frame."""

    def __init__(self, url: str, cookie: str, path: str = "/api/stream?widgets=fanin") -> None:
        parts = httpx.URL(url)
        self.host, self.port, self.cookie, self.path = parts.host, int(parts.port or 80), cookie, path
        self.events: list[tuple[str, str, float]] = []
        self.opened = 0  # how many times the stream was opened
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        asyncio.run(self.follow())

    async def follow(self) -> None:
        def seen(event: str, data: str, _at: float) -> None:
            self.events.append((event, data, time.monotonic()))

        while not self.stopping.is_set():
            self.opened += 1
            reading = asyncio.ensure_future(rawhttp.sse_stream(self.host, self.port, self.path, self.cookie, seen))
            # the thread's stop is a threading.Event: looked at between short waits on the stream
            while not self.stopping.is_set() and not (await asyncio.wait({reading}, timeout=0.1))[0]:
                pass
            reading.cancel()
            await asyncio.gather(reading, return_exceptions=True)
            await asyncio.sleep(1.0)  # the retry the site's frames ask for

    def after(self, moment: float, event: str) -> list[float]:
        """Seconds after `moment` at which `event` frames came."""
        return [round(at - moment, 2) for name, _, at in self.events if name == event and at >= moment]

    def __enter__(self) -> Watch:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self.thread.join(timeout=5)
