"""What every attack of `make reliability` drives: `emqlab serve` as an
operator runs it (a data directory of its own, Ctrl-C to stop), the
`emqlab` command from a shell, HTTP clients leaving from chosen loopback
addresses (httpx), and the row an attack records. Nothing here asserts."""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import redis

from bench.servers import DIVE, ROOT, Served, launch
from server.valkey.process import free_port

TOKEN = "reliability-instructor-token"
# variables of this machine that would point a scenario's site elsewhere
UNSET = ("EMQLAB_VALKEY_URL", "EMQLAB_VALKEY_CLUSTER", "EMQLAB_DATA_DIR", "EMQLAB_EPHEMERAL", "EMQLAB_SECRET",
         "EMQLAB_INSTRUCTOR_TOKEN")


@dataclass
class Row:
    """One attempt and what came of it: a line of an item's table."""

    tried: str
    statuses: str = "—"
    happened: str = ""
    held: bool | None = None  # what issue 38 asks for was so; None for a listing


def counted(codes: Iterable[int | str]) -> str:
    """"20 × 401, 280 × 429": each status with how often it came (0: no answer)."""
    found = collections.Counter(str(code) for code in codes)
    return ", ".join(f"{n} × {code}" for code, n in sorted(found.items())) or "none"


class Serve:
    """`python -m server.cli serve` on a free port and a scratch data directory, stopped with Ctrl-C (SIGINT)."""

    def __init__(self) -> None:
        self.port = free_port()
        self.work = Path(tempfile.mkdtemp(prefix="emqlab-rel-"))
        self.data_dir = self.work / "data"
        self.env = {**{k: v for k, v in os.environ.items() if k not in UNSET}, "PYTHONPATH": str(ROOT),
                    "EMQLAB_INSTRUCTOR_TOKEN": TOKEN, "EMQLAB_STATE_DIR": str(self.work / "state")}
        self.url = f"http://127.0.0.1:{self.port}"
        self.served: Served | None = None

    def __enter__(self) -> Serve:
        command = [sys.executable, "-m", "server.cli", "serve", "--port", str(self.port), "--data-dir",
                   str(self.data_dir)]
        self.served = launch(command, "emqlab serve", self.env, self.url, "/", log=self.work / "serve.log",
                             cwd=self.work, within=60, stop_signal=signal.SIGINT)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.served is not None:
            self.served.stop()  # its log's directory, the scratch one, goes with it

    def redis(self) -> redis.Redis:
        running = json.loads((self.data_dir / "running.json").read_text())
        return redis.Redis.from_url(running["url"], decode_responses=True)

    def emqlab(self, *args: str) -> subprocess.CompletedProcess[str]:
        """The `emqlab` command from a shell, on this site's data directory."""
        return subprocess.run([sys.executable, "-m", "server.cli", *args, "--data-dir", str(self.data_dir)],
                              capture_output=True, text=True, check=False, timeout=60, cwd=ROOT, env=self.env)


def visitor(url: str, address: str | None = None, page: str = DIVE) -> httpx.Client:
    """A browser (leaving from `address`: another visitor address) that opened a page: it holds a cookie."""
    transport = httpx.HTTPTransport(local_address=address) if address else None
    made = httpx.Client(base_url=url, timeout=30, transport=transport)
    made.get(page)
    return made


def instructor(url: str, token: str = TOKEN, address: str | None = None) -> tuple[httpx.Client, int]:
    """A browser signed in with the form (its status: 303 when it worked)."""
    made = visitor(url, address, "/")
    return made, made.post("/instructor/sign-in", data={"token": token}).status_code


def console(holder: httpx.Client, line: str) -> httpx.Response:
    return holder.post("/api/console", json={"command": line})


def act(holder: httpx.Client, action: str, widget: str = "fanin", **body: Any) -> httpx.Response:
    return holder.post(f"/api/widgets/{widget}/{action}", json=body)


def said(answer: httpx.Response, limit: int = 120) -> str:
    """The sentence of an answer: its `error`, `message` or outcome, cut to `limit`."""
    try:
        body = answer.json()
    except ValueError:
        return answer.text[:limit].replace("\n", " ")
    if not isinstance(body, dict):
        return str(body)[:limit]
    outcome = body["outcome"] if isinstance(body.get("outcome"), dict) else {}
    return str(body.get("error") or body.get("message") or outcome.get("text")
               or " / ".join(body.get("reply_lines", [])[:2]) or body)[:limit]
