"""The baseline of figure 1: a minimal Starlette endpoint running one EVALSHA.

    POST /evalsha   runs one registered script (EVALSHA) on the same Valkey and
                    answers a small JSON body
    GET  /paint     a bare page whose one button POSTs to /evalsha and paints
                    the answer: the baseline of click to settled (bench_paint)

Served exactly like the site (same workers, same loop, same flags), on the
same Valkey, in the same run, so the ratio compares the site's work per
action with the least an HTTP endpoint backed by one script can do. On a
cluster it takes the same client the site takes (`server.valkey.client`): a
RedisCluster, so its EVALSHA goes to the node owning the key's slot.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse
from starlette.routing import Route

from server.valkey import client as connect

SCRIPT = "return redis.call('INCR', KEYS[1])"
KEY = "bench:baseline:{evalsha}"

# The least a widget can be: one fetch to the one-EVALSHA endpoint, its answer
# written into the readout. Same selectors as a site widget, so bench_paint
# clicks and observes both the same way.
PAINT_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>bare paint</title></head><body>
<div data-widget="bare">
  <button type="button" data-action="evalsha">EVALSHA</button>
  <output data-role="value">-</output>
</div>
<script>
const root = document.querySelector('[data-widget="bare"]');
root.querySelector("button").addEventListener("click", async () => {
  const response = await fetch("/evalsha", { method: "POST", body: "{}",
                                             headers: { "Content-Type": "application/json" } });
  const data = await response.json();
  root.querySelector('[data-role="value"]').textContent = String(data.value);
});
</script>
</body></html>
"""


def create_app(url: str) -> Starlette:
    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        conn = connect.open_client(url)  # one server, or a cluster (EMQLAB_VALKEY_CLUSTER / INFO cluster)
        app.state.conn = conn
        app.state.script = conn.register_script(SCRIPT)
        await app.state.script(keys=[KEY])  # loads it once: every request is an EVALSHA
        try:
            yield
        finally:
            await conn.aclose()

    async def evalsha(request: Request) -> JSONResponse:
        await request.body()
        value = await request.app.state.script(keys=[KEY])
        return JSONResponse({"value": value})

    async def paint(request: Request) -> HTMLResponse:
        return HTMLResponse(PAINT_PAGE)

    async def health(request: Request) -> PlainTextResponse:
        return PlainTextResponse("ok")

    return Starlette(
        routes=[Route("/evalsha", evalsha, methods=["GET", "POST"]), Route("/paint", paint),
                Route("/health", health)],
        lifespan=lifespan,
    )


def app_from_env() -> Starlette:
    return create_app(os.environ["EMQLAB_VALKEY_URL"])
