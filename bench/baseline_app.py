"""The same-run baselines: the least an HTTP endpoint backed by one script can do.

POST /evalsha (one EVALSHA: an INCR) is the throughput baseline; POST
/act/<learner> (one script that INCRs the learner's key and PUBLISHes it)
with GET /stream/<learner> (a bare SSE stream fed by the process's one
SUBSCRIBE) is a click and its frame at their simplest (the learners
figure), and GET /paint?u=<learner> a bare page of them (click to settled).
Served exactly like the site, on the same Valkey, in the same run; on a
cluster its client is the site's (a RedisCluster).
"""
from __future__ import annotations

import asyncio
import contextlib
import os
import re
from collections.abc import AsyncIterator, Iterator

import redis.asyncio as aioredis
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from server.valkey.client import open_client

SCRIPT = "return redis.call('INCR', KEYS[1])"
KEY = "bench:baseline:{evalsha}"
# The learner's value and its news in one script: one round trip, like /evalsha.
ACT_SCRIPT = """
local value = redis.call('INCR', KEYS[1])
redis.call('PUBLISH', ARGV[1], ARGV[2] .. ' ' .. value)
return value
"""
CHANNEL = "bench:bare"
LEARNER = re.compile(r"\A[a-z0-9]{1,32}\Z")
PING_EVERY = 15.0  # seconds, the site's default stream ping


def learner_key(learner: str) -> str:
    return f"bench:bare:{{{learner}}}"


# The least a widget can be: a button that POSTs, and a stream whose value is
# painted in version order (as lab.js paints `ver`). Same selectors as a site
# widget, so bench_paint clicks and observes both the same way.
PAINT_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>bare paint</title></head><body>
<div data-widget="bare">
  <button type="button" data-action="act">Act</button>
  <output data-role="value">-</output>
</div>
<script>
const learner = new URLSearchParams(location.search).get("u") || "paint";
const root = document.querySelector('[data-widget="bare"]');
root.querySelector("button").addEventListener("click", async () => {
  const response = await fetch(`/act/${learner}`, { method: "POST", body: "{}",
                                                   headers: { "Content-Type": "application/json" } });
  await response.json();
});
const source = new EventSource(`/stream/${learner}`);
source.addEventListener("value", (e) => {
  const ver = Number(e.data);
  if (ver < Number(root.dataset.ver || 0)) return;
  root.dataset.ver = String(ver);
  root.querySelector('[data-role="value"]').textContent = e.data;
});
</script>
</body></html>
"""


class Listeners:
    """The open streams by learner, fed by one subscription of the process."""

    def __init__(self) -> None:
        self.queues: dict[str, set[asyncio.Queue[str]]] = {}

    @contextlib.contextmanager
    def open(self, learner: str) -> Iterator[asyncio.Queue[str]]:
        queue: asyncio.Queue[str] = asyncio.Queue(maxsize=500)
        self.queues.setdefault(learner, set()).add(queue)
        try:
            yield queue
        finally:
            self.queues[learner].discard(queue)  # in self.queues for as long as it holds `queue`
            if not self.queues[learner]:
                del self.queues[learner]

    def hand(self, data: str) -> None:
        learner, _, value = data.partition(" ")
        for queue in self.queues.get(learner, ()):
            with contextlib.suppress(asyncio.QueueFull):
                queue.put_nowait(value)

    async def follow(self, url: str) -> None:
        """Subscribe to the channel until cancelled (reconnecting on a drop)."""
        while True:
            client = aioredis.Redis.from_url(url, decode_responses=True)
            try:
                async with client.pubsub() as pubsub:
                    await pubsub.subscribe(CHANNEL)
                    async for message in pubsub.listen():
                        if message.get("type") == "message":
                            self.hand(str(message["data"]))
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - a dropped subscription: subscribe again
                await asyncio.sleep(0.25)
            finally:
                with contextlib.suppress(Exception):
                    await client.aclose()


def create_app(url: str) -> Starlette:
    listeners = Listeners()

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        conn = open_client(url)  # one server, or a cluster (EMQLAB_VALKEY_CLUSTER / INFO cluster)
        app.state.conn = conn
        app.state.script = conn.register_script(SCRIPT)
        app.state.act = conn.register_script(ACT_SCRIPT)
        await app.state.script(keys=[KEY])  # loads it once: every request is an EVALSHA
        await app.state.act(keys=[learner_key("warm")], args=[CHANNEL, "warm"])
        # the bare stream is measured on one server only (the learners figure); on a
        # cluster the baseline serves /evalsha alone (a PUBLISH there needs no stream)
        follower = None if isinstance(conn, aioredis.RedisCluster) else asyncio.create_task(listeners.follow(url))
        try:
            yield
        finally:
            if follower is not None:
                follower.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await follower
            await conn.aclose()

    async def evalsha(request: Request) -> JSONResponse:
        await request.body()
        return JSONResponse({"value": await request.app.state.script(keys=[KEY])})

    async def act(request: Request) -> Response:
        learner = request.path_params["learner"]
        if not LEARNER.match(learner):
            return PlainTextResponse("not a learner", status_code=400)
        await request.body()
        value = await request.app.state.act(keys=[learner_key(learner)], args=[CHANNEL, learner])
        return JSONResponse({"value": value, "ver": value})

    async def stream(request: Request) -> Response:
        learner = request.path_params["learner"]
        if not LEARNER.match(learner):
            return PlainTextResponse("not a learner", status_code=400)
        current = await request.app.state.conn.get(learner_key(learner))

        async def frames() -> AsyncIterator[bytes]:
            with listeners.open(learner) as queue:
                yield b"event: value\r\ndata: " + str(current or 0).encode() + b"\r\n\r\n"
                while True:
                    try:
                        async with asyncio.timeout(PING_EVERY):
                            value = await queue.get()
                    except TimeoutError:
                        yield b": ping\r\n\r\n"
                        continue
                    yield b"event: value\r\ndata: " + value.encode() + b"\r\n\r\n"

        return StreamingResponse(frames(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})

    return Starlette(
        routes=[Route("/evalsha", evalsha, methods=["GET", "POST"]), Route("/act/{learner}", act, methods=["POST"]),
                Route("/stream/{learner}", stream), Route("/paint", lambda _: HTMLResponse(PAINT_PAGE)),
                Route("/health", lambda _: PlainTextResponse("ok"))],
        lifespan=lifespan)


def app_from_env() -> Starlette:
    return create_app(os.environ["EMQLAB_VALKEY_URL"])
