"""Sample the site with py-spy while a benchmark runs, and sum the samples
by function (what docs/PERFORMANCE.md shows beside the figures).

py-spy comes with the `bench` extra (`make bench` installs it); when it is not
installed (on PATH or beside the running Python), the report says so. A
profile is always taken in a window of its own, after the measured one, so
its pauses never touch a figure.
"""

from __future__ import annotations

import collections
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any


def py_spy() -> str | None:
    beside = Path(sys.executable).parent / "py-spy"
    return str(beside) if beside.exists() else shutil.which("py-spy")


class Recording:
    """``with Recording(pid, seconds) as rec: <load>``; then ``rec.top()``."""

    def __init__(self, pid: int, seconds: float, rate: int = 200) -> None:
        self.pid, self.seconds, self.rate = pid, seconds, rate
        self.out = Path(tempfile.mkdtemp(prefix="emqlab-prof-")) / "raw.txt"
        self.proc: subprocess.Popen[bytes] | None = None
        self.error = ""

    def __enter__(self) -> Recording:
        binary = py_spy()
        if binary is None:
            self.error = "py-spy is not installed"
            return self
        self.proc = subprocess.Popen(
            # blocking (the default): each sample pauses the process for a moment, but
            # its stacks are whole; --nonblocking cut them, and the shares with them
            [binary, "record", "--subprocesses", "-p", str(self.pid), "-d", str(max(1, round(self.seconds))),
             "-r", str(self.rate), "-f", "raw", "-o", str(self.out)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            _, err = self.proc.communicate(timeout=self.seconds + 60)
            if self.proc.returncode != 0 or not self.out.exists():
                self.error = ((err or b"").decode(errors="replace").strip().splitlines()[-1:] and \
                    (err or b"").decode(errors="replace").strip().splitlines()[-1]) or "py-spy failed"

    def top(self, limit: int = 12) -> dict[str, Any]:
        """Our own frames (server/) by inclusive share, and every frame by self share."""
        if self.error or not self.out.exists():
            return {"error": self.error or "no samples"}
        inclusive: collections.Counter[str] = collections.Counter()
        own: collections.Counter[str] = collections.Counter()
        total = 0
        for line in self.out.read_text().splitlines():
            stack, _, count = line.rpartition(" ")
            if not stack or not count.isdigit():
                continue
            n = int(count)
            total += n
            frames = [re.sub(r":\d+\)$", ")", f) for f in stack.split(";")]
            own[frames[-1]] += n
            for key in set(frames):
                inclusive[key] += n
        shutil.rmtree(self.out.parent, ignore_errors=True)
        if not total:
            return {"error": "no samples"}
        ours = [(k, v) for k, v in inclusive.most_common() if "(server/" in k][:limit]
        return {
            "samples": total,
            "ours_inclusive": [{"share": round(100 * v / total, 1), "frame": k} for k, v in ours],
            "self": [{"share": round(100 * v / total, 1), "frame": k} for k, v in own.most_common(limit)],
        }
