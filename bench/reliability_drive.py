"""What every scenario of `make reliability` drives: HTTP clients from chosen
loopback addresses (a learner, an instructor), a look at Valkey's keys byte
for byte, and the row a scenario records (bench/reliability_procs.py starts
and watches the processes).

The scenarios try things and write down what happened; nothing here asserts.
A wait that runs out returns None rather than raising, so the row says "not
within N s" and the next attempt still runs.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx
import redis
from itsdangerous import URLSafeSerializer

from server.sandboxes.sandbox import COOKIE

ROOT = Path(__file__).resolve().parent.parent
DIVE = "/flows/parent-and-children"
TOKEN = "reliability-instructor-token"  # 28 characters: over the 16 the site asks for
T = TypeVar("T")


@dataclass
class Row:
    """One attempt and what came of it: a line of an item's table."""

    tried: str
    statuses: str = "—"
    seconds: float | None = None  # to recover, or what the attempt took
    bytes: int | None = None
    happened: str = ""
    held: bool | None = None  # what issue 28 asks for was so; None for a listing


@dataclass(frozen=True)
class Mode:
    """Full (the page) or quick (the smoke test): the same attempts, smaller."""

    quick: bool = False

    def pick(self, quick: T, full: T) -> T:
        return quick if self.quick else full


def counted(codes: Iterable[int | str]) -> str:
    """"20 × 401, 280 × 429": each status with how often it came (0: no answer)."""
    found = collections.Counter(str(code) for code in codes)
    return ", ".join(f"{n} × {code}" for code, n in sorted(found.items())) or "none"


def wait_for(check: Callable[[], T | None], timeout: float, every: float = 0.05) -> tuple[T | None, float]:
    """Poll `check` until it answers something true: (that answer, seconds it took), or (None, timeout)."""
    started = time.monotonic()
    while True:
        found = check()
        if found:
            return found, round(time.monotonic() - started, 2)
        if time.monotonic() - started >= timeout:
            return None, round(timeout, 2)
        time.sleep(every)


def status_of(call: Callable[[], httpx.Response]) -> int:
    """A request's status; 0 when no answer came (refused, reset, timed out)."""
    try:
        return call().status_code
    except httpx.HTTPError:
        return 0


# -- clients -----------------------------------------------------------------------


def client(url: str, address: str | None = None, **kwargs: Any) -> httpx.Client:
    """A client whose connections leave from `address` (127.0.0.2, …): another visitor address."""
    transport = httpx.HTTPTransport(local_address=address) if address else None
    return httpx.Client(base_url=url, timeout=15, transport=transport, **kwargs)


def visitor(url: str, address: str | None = None, page: str = DIVE) -> httpx.Client:
    """A learner who opened a dive: they hold a sandbox cookie."""
    made = client(url, address)
    made.get(page)
    return made


def instructor(url: str, token: str = TOKEN, address: str | None = None) -> tuple[httpx.Client, int]:
    """A browser signed in with the form (its status: 303 when it worked)."""
    made = visitor(url, address, "/")
    return made, made.post("/instructor/sign-in", data={"token": token}).status_code


def sandbox_of(holder: httpx.Client) -> str:
    """The sandbox a cookie names: signed, not encrypted, so its payload reads without the secret."""
    _, sandbox = URLSafeSerializer("").loads_unsafe(holder.cookies.get(COOKIE) or "")
    return str(sandbox)


def deps(holder: httpx.Client) -> int | None:
    """The fan-in's `:dependencies` as the learner's page draws it (None: no snapshot, or no counter)."""
    answer = holder.get("/api/widgets/fanin/state")
    if answer.status_code != 200:
        return None
    found = answer.json()["snapshot"]["picture"]["parent"]["dependencies"]
    return None if found is None else int(found)


def act(holder: httpx.Client, action: str, widget: str = "fanin", **body: Any) -> httpx.Response:
    return holder.post(f"/api/widgets/{widget}/{action}", json=body)


def console(holder: httpx.Client, line: str) -> httpx.Response:
    return holder.post("/api/console", json={"command": line})


def said(answer: httpx.Response, limit: int = 140) -> str:
    """The sentence of an answer: its `error`, `message`, outcome or first reply lines, cut to `limit`."""
    try:
        body = answer.json()
    except ValueError:
        return answer.text[:limit]
    if not isinstance(body, dict):
        return str(body)[:limit]
    outcome: dict[str, Any] = body["outcome"] if isinstance(body.get("outcome"), dict) else {}
    text = (body.get("error") or body.get("message") or outcome.get("text")
            or " / ".join(body.get("reply_lines", [])[:2]))
    return str(text)[:limit]


# -- what Valkey holds ----------------------------------------------------------------


def keys_of(r: redis.Redis, sandbox: str, records: bool = True) -> list[str]:
    """Every key of a sandbox: its queues' emq: and lab: keys, and (`records`) the site's
    records of it (activity, progress, console transcripts: a refused line is written there)."""
    patterns = [f"emq:{{{sandbox}.*", f"lab:{{{sandbox}{'*' if records else '.*'}"]
    return sorted(str(name) for pattern in patterns for name in r.scan_iter(match=pattern, count=1000))


def dumps(r: redis.Redis, sandbox: str, records: bool = True) -> dict[str, bytes]:
    """Each key of the sandbox and its DUMP: equal dicts are byte-identical keys."""
    # redis-py's DUMP never decodes its reply, whatever the client's decode_responses
    return {key: bytes(r.dump(key) or b"") for key in keys_of(r, sandbox, records)}


def memory_of(r: redis.Redis, sandbox: str) -> int:
    """What Valkey holds for the sandbox: MEMORY USAGE of each of its keys, summed."""
    return sum(int(r.memory_usage(key, samples=0) or 0) for key in keys_of(r, sandbox))


def last_line(text: str, limit: int = 160) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:limit] if lines else ""
