"""The real site under uvicorn (a subprocess on a free port), for the
integration, e2e and screenshot runs that need the whole stack: middleware,
cookies, the stream, a Valkey that goes away.

TestClient/ASGITransport buffer whole responses, so the stream is only
testable against a real server; and a subprocess keeps sse-starlette's
process-wide state out of the test process.
"""

from __future__ import annotations

import html
import os
import re
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import redis
from itsdangerous import URLSafeSerializer

from bench import servers
from server.live.heartbeat import BEAT_TAG
from server.sandboxes.sandbox import COOKIE, SANDBOX_RE
from server.valkey.process import ValkeyProcess, free_port, port_free

ROOT = Path(__file__).resolve().parents[1]
INSTRUCTOR_TOKEN = "test-instructor-token-16+"
DIVE = "/flows/parent-and-children"
# A test's client lets an idle connection go well before uvicorn's 5 s keep-alive does: at equal
# times, a request sent as the server closes the connection fails (httpx.ReadError) under load.
LIMITS = httpx.Limits(keepalive_expiry=1.0)
# Keys the site rewrites on its own clock, whatever a request did: the hub's heartbeat.
SITE_CLOCK = ("emq:{" + BEAT_TAG,)


class LiveSite:
    def __init__(self, valkey_url: str, env: dict[str, str] | None = None) -> None:
        self.valkey_url = valkey_url
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "EMQLAB_VALKEY_URL": valkey_url,
            "EMQLAB_INSTRUCTOR_TOKEN": INSTRUCTOR_TOKEN,
            # No rate counters (keys with a TTL that vanish mid-test) unless a
            # test turns them on.
            "EMQLAB_RATE_LIMIT": "0",
            "EMQLAB_READ_LIMIT": "0",
            "EMQLAB_ATTEMPT_LIMIT": "0",
            "EMQLAB_ADDRESS_RATE_LIMIT": "0",
            "EMQLAB_ADDRESS_SANDBOXES": "0",
            # the site's data (its cookie secret) in a folder of its own, gone with the test run
            "EMQLAB_DATA_DIR": tempfile.mkdtemp(prefix="emqlab-site-"),
            **(env or {}),
        }
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 30.0, output: Any = None) -> LiveSite:
        """Start the site; its log goes to `output` (a file) when given, else to ours."""
        self.proc = subprocess.Popen(
            # as `emqlab serve` runs it (server.cli.run_uvicorn), the way every bench server starts
            servers.uvicorn_command("server.cli:app_from_env", self.port),
            env=self.env, cwd=str(ROOT), stdout=output, stderr=output,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                if not port_free(self.port):
                    # the free port was taken before the site bound it (a client's connection of another
                    # test leaves from the same range): another port
                    self.port = free_port()
                    self.url = f"http://127.0.0.1:{self.port}"
                    return self.start(timeout, output)
                raise RuntimeError(f"the site exited early with {self.proc.returncode}")
            try:
                if httpx.get(self.url + "/", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"the site did not answer within {timeout} s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            stop_site(self.proc)
        self.proc = None

    def client(self, **kwargs: Any) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=10, **{"limits": LIMITS, **kwargs})

    def client_from(self, address: str, **kwargs: Any) -> httpx.Client:
        """A client whose connections leave from `address` (127.0.0.2, 127.0.0.3, …):
        another address to the site's per-address limits."""
        return self.client(transport=httpx.HTTPTransport(local_address=address, limits=LIMITS), **kwargs)

    def visitor(self, page: str = DIVE) -> httpx.Client:
        """A client holding a fresh sandbox cookie (it opened a page)."""
        client = self.client()
        assert client.get(page).status_code == 200
        return client

    def instructor(self) -> httpx.Client:
        client = self.visitor("/")
        answer = client.post("/instructor/sign-in", data={"token": INSTRUCTOR_TOKEN})
        assert answer.status_code == 303, answer.text
        return client

    def redis(self) -> redis.Redis:
        return redis.Redis.from_url(self.valkey_url, decode_responses=True)


@contextmanager
def running(valkey_url: str, env: dict[str, str] | None = None) -> Iterator[LiveSite]:
    site = LiveSite(valkey_url, env).start()
    try:
        yield site
    finally:
        site.stop()


def sandbox_of(client: httpx.Client | httpx.AsyncClient) -> str:
    """The visitor's own sandbox id, read from the payload of their cookie
    (signed, not encrypted: no secret is needed to read it, only to forge it).
    Pages never name a sandbox, so a class's shared one is not found here."""
    raw = client.cookies.get(COOKIE)
    assert raw, "the client holds no sandbox cookie: open a page first (LiveSite.visitor)"
    _, sandbox = URLSafeSerializer("").loads_unsafe(raw)
    assert isinstance(sandbox, str) and SANDBOX_RE.fullmatch(sandbox), raw
    return sandbox


def deps(seen: dict[str, Any]) -> int | None:
    """The fan-in's `:dependencies` as a snapshot (JSON) or a widget frame (HTML) draws it (None: no counter)."""
    if "html" in seen:
        found = re.search(r'data-role="dependencies">([^<]*)<', seen["html"])
        value = html.unescape(found.group(1)) if found else "—"
        return None if value == "—" else int(value)
    counter = seen["picture"]["parent"]["dependencies"]
    return None if counter is None else int(counter)


def drawn(data: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A `widget` frame's HTML as a test reads it: its widget, `ver` and HTML, and the effects its log lists."""
    section = re.search(r'<section [^>]*data-widget="([^"]+)"[^>]*>', data)
    assert section, data[:200]
    ver = re.search(r'data-ver="(\d+)"', section.group(0))
    effects = [{"key": html.unescape(key), "event": event, "words": html.unescape(words)}
               for key, event, words in re.findall(
                   r'<li class="effect" title="([^"]*)"><code class="effect-verb"[^>]*>([^<]*)</code>.*?'
                   r'<span class="effect-words">([^<]*)</span>', data, re.S)]
    return {"widget": section.group(1), "ver": int(ver.group(1)) if ver else None, "html": data}, effects


@contextmanager
def streaming(client: httpx.Client, widgets: str = "fanin", page: str = DIVE,
              read_timeout: float = 15) -> Iterator[Events]:
    """A page's stream of `widgets`, opened from `page` (its Referer), as Events."""
    with client.stream("GET", f"/api/stream?widgets={widgets}", headers={"Referer": f"{client.base_url}{page}"},
                       timeout=httpx.Timeout(10, read=read_timeout)) as response:
        assert response.status_code == 200, response.read()
        yield Events(response)


class Events:
    """Reads a Server-Sent Events response event by event (one line iterator)."""

    def __init__(self, response: httpx.Response) -> None:
        self.lines = response.iter_lines()
        self.seen: list[tuple[str, dict[str, Any]]] = []
        self.queued: list[tuple[str, dict[str, Any]]] = []

    def next(self, deadline: float | None = None) -> tuple[str, dict[str, Any]]:
        """The next event; a `widget` frame comes after the effects its log lists, each as an `effect`.
        Past `deadline` (monotonic) it gives up at the next line, a keep-alive ping included."""
        import json

        if self.queued:
            item = self.queued.pop(0)
            self.seen.append(item)
            return item
        event, data = None, []
        for line in self.lines:
            if deadline is not None and time.monotonic() > deadline:
                raise AssertionError(f"no event in time; events so far: {[e for e, _ in self.seen]}")
            if line.startswith("event:"):
                event = line.split(":", 1)[1].strip()
            elif line.startswith("data:") and event:
                data.append(line[len("data:"):].removeprefix(" "))
            elif not line and event and data:
                if event == "widget":
                    frame, effects = drawn("\n".join(data))
                    self.queued = [*(("effect", e) for e in effects), ("widget", frame)]
                    return self.next(deadline)
                item = (event, json.loads("\n".join(data)))
                self.seen.append(item)
                return item
        raise AssertionError(f"the stream ended; events so far: {[e for e, _ in self.seen]}")

    def until(self, wanted: str, timeout: float = 10.0, where: Callable[[dict[str, Any]], bool] | None = None,
              **match: Any) -> list[tuple[str, dict[str, Any]]]:
        """Every event up to and including the first `wanted` whose data has `match`
        (and for which `where(data)` holds, when given)."""
        got: list[tuple[str, dict[str, Any]]] = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            event, data = self.next(deadline)
            got.append((event, data))
            if event == wanted and all(data.get(k) == v for k, v in match.items()) and (where is None or where(data)):
                return got
        raise AssertionError(f"no {wanted!r} {match} within {timeout} s: {[e for e, _ in got]}")


@dataclass
class Site:
    """What the e2e fixtures hand a test: the site's URL and its Valkey."""

    url: str
    valkey: ValkeyProcess
    proc: subprocess.Popen[bytes]

    def redis(self) -> redis.Redis:
        return redis.Redis.from_url(self.valkey.url, decode_responses=True)


def start_site(valkey_url: str, extra_env: dict[str, str] | None = None) -> tuple[str, subprocess.Popen[bytes]]:
    """Start the site; return its URL and process once it answers."""
    site = LiveSite(valkey_url, extra_env).start()
    assert site.proc is not None
    return site.url, site.proc


def stop_site(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)


@contextmanager
def own_site(extra_env: dict[str, str] | None = None) -> Iterator[Site]:
    """A Valkey of its own and the site on it, for one module or session."""
    with ValkeyProcess() as valkey:
        url, proc = start_site(valkey.url, extra_env)
        try:
            yield Site(url, valkey, proc)
        finally:
            stop_site(proc)


def pid_alive(pid: int) -> bool:
    """Whether a process `pid` is still there (signal 0 asks without sending)."""
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


def dumped(r: redis.Redis, pattern: str = "*", skip: tuple[str, ...] = ()) -> dict[Any, Any]:
    """Every key matching ``pattern`` with its DUMP, but the site's own clockwork (``SITE_CLOCK``)
    and any prefix in ``skip``: what "nothing was written" compares, before and after."""
    ignored = SITE_CLOCK + skip
    return {key: r.dump(key) for key in r.scan_iter(pattern, count=1000)
            if not (key.decode() if isinstance(key, bytes) else key).startswith(ignored)}
