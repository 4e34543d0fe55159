"""Run bench.load in its own process (so its CPU is not the measuring process's)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.servers import ROOT, child_env


class Background:
    """``with Background(url, cookies, rate) as load: ...``; ``load.result`` afterwards."""

    def __init__(self, url: str, cookies: list[str], rate: float, streams: bool = True, stream_path: str = "") -> None:
        self.url, self.cookies, self.rate, self.streams, self.stream_path = url, cookies, rate, streams, stream_path
        self.proc: subprocess.Popen[str] | None = None
        self.result: dict[str, Any] = {}
        self.file = ""

    def __enter__(self) -> Background:
        handle = tempfile.NamedTemporaryFile("w", delete=False, suffix=".cookies", prefix="emqlab-bench-")
        handle.write("\n".join(self.cookies))
        handle.close()
        self.file = handle.name
        command = [sys.executable, "-m", "bench.load", self.url, self.file, "--rate", str(self.rate)]
        if not self.streams:
            command.append("--no-streams")
        if self.stream_path:
            command += ["--stream", self.stream_path]
        self.proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=str(ROOT), env=child_env())
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if line.strip() != "READY":
            self.proc.kill()
            raise RuntimeError(f"background load did not start: {line!r}")
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                out, _ = self.proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                out, _ = self.proc.communicate()
            for line in out.splitlines():
                if line.startswith("RESULT "):
                    self.result = json.loads(line[len("RESULT "):])
        Path(self.file).unlink(missing_ok=True)
