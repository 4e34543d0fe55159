"""`emqlab serve` as an operator runs it: a real process on a free port, with
a data directory of its own, its output kept in files the test reads."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import redis

from server.valkey.process import free_port

ROOT = Path(__file__).resolve().parents[3]
# Variables of the machine that would point a test's site elsewhere.
UNSET = ("EMQLAB_VALKEY_URL", "EMQLAB_VALKEY_CLUSTER", "EMQLAB_DATA_DIR", "EMQLAB_EPHEMERAL", "EMQLAB_SECRET")


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


def valkeys_of(pid: int) -> list[int]:
    return [child for child in children(pid) if "valkey-server" in command_of(child)]


def alive(pid: int) -> bool:
    """A process that still runs: a zombie waiting for a parent that is no
    init (as in some containers) has ended all the same."""
    return state_of(pid) not in (None, "Z", "X")


def wait_for(check: Callable[[], Any], timeout: float, what: str) -> Any:
    """Poll `check` until it answers something true; a liveness deadline, not a timing."""
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, f"{what}: not within {timeout} s"
        time.sleep(0.05)


class Serve:
    def __init__(self, workdir: Path, *flags: str, data_dir: Path | None = None,
                 env: dict[str, str] | None = None, preexec: Callable[[], None] | None = None) -> None:
        self.port = free_port()
        self.workdir = workdir
        self.data_dir = data_dir if data_dir is not None else workdir / "data"
        ephemeral = "--ephemeral" in flags
        self.argv = [sys.executable, "-m", "server.cli", "serve", "--port", str(self.port), *flags,
                     *([] if ephemeral else ["--data-dir", str(self.data_dir)])]
        self.env = {k: v for k, v in os.environ.items() if k not in UNSET}
        # The old state folder of this test alone, never the machine's.
        self.env.update({"PYTHONPATH": str(ROOT), "EMQLAB_STATE_DIR": str(workdir / "state"), **(env or {})})
        self.out = workdir / f"serve-{self.port}.out"
        self.log = workdir / f"serve-{self.port}.log"
        self.preexec = preexec
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def launch(self) -> subprocess.Popen[bytes]:
        with self.out.open("wb") as out, self.log.open("wb") as log:
            self.proc = subprocess.Popen(self.argv, cwd=self.workdir, env=self.env, stdout=out, stderr=log,
                                         stdin=subprocess.DEVNULL,
                                         preexec_fn=self.preexec)  # noqa: PLW1509 -- a setrlimit, nothing that locks
        return self.proc

    def start(self, timeout: float = 40.0) -> Serve:
        proc = self.launch()

        def answering() -> bool:
            assert proc.poll() is None, f"serve exited with {proc.returncode}: {self.said()}"
            try:
                return httpx.get(self.url + "/", timeout=2).status_code == 200
            except httpx.HTTPError:
                return False

        try:
            wait_for(answering, timeout, "the site answering")
        except BaseException:
            proc.kill()  # a start that failed leaves no `emqlab serve` behind (no __exit__ runs for it)
            proc.wait(timeout=10)
            raise
        return self

    def said(self) -> str:
        return self.out.read_text(errors="replace") + self.log.read_text(errors="replace")

    def running(self) -> dict[str, Any]:
        return dict(json.loads((self.data_dir / "running.json").read_text()))

    def redis(self) -> redis.Redis:
        return redis.Redis.from_url(self.running()["url"], decode_responses=True)

    def stop(self, how: signal.Signals = signal.SIGINT) -> int:
        """Ctrl-C, as a terminal sends it to serve (or SIGTERM, as a service manager does); its exit status."""
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(how)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
                raise AssertionError(f"serve did not stop on {how.name}: {self.said()}") from None
        return self.proc.returncode

    def __enter__(self) -> Serve:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
