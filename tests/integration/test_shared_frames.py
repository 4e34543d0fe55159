"""A widget's stream frame is encoded once per drawing and shared (server/widgets/frames.py):
every page of a sandbox that opens on one snapshot, and a change's broadcast of it, is handed
the one bytes object, so a thousand open pages hold one frame, not a thousand copies."""

from __future__ import annotations

import asyncio

from starlette.templating import Jinja2Templates

from server.app import SITE
from server.emq.wire import Conn
from server.live.streams import FRESH_AT_ONCE
from server.sandboxes.sandbox import COOKIE
from server.valkey.process import ValkeyProcess
from server.web.templating import static_url
from server.widgets import WIDGETS, reader
from server.widgets.draw import Drawing
from server.widgets.frames import Frames
from server.widgets.snapshot import Snapshot
from tests.support import running
from tests.widgets import SANDBOX, act, catalog, lab, show


def frames_of(conn: Conn) -> Frames:
    templates = Jinja2Templates(directory=str(SITE / "templates"))
    templates.env.globals["static_url"] = static_url(SITE / "static")
    return Frames(lab(conn), Drawing(templates.env))


async def read(conn: Conn, name: str = "fanin") -> Snapshot:
    return (await reader.snapshot(conn, catalog(), WIDGETS[name], SANDBOX))[1]


async def test_pages_opening_on_one_snapshot_are_handed_one_encoded_frame(conn: Conn) -> None:
    await show(conn, "fanin")  # landed
    frames = frames_of(conn)
    # two pages' first frames, each from a read of its own of the same keys
    first = frames.event(SANDBOX, "fanin", await read(conn))
    second = frames.event(SANDBOX, "fanin", await read(conn))
    assert first is second and first.startswith(b"event: widget\r\ndata: ")
    assert frames.encoded.cache_info().currsize == 1  # encoded once


async def test_a_changes_frame_is_the_one_a_page_opening_after_it_is_handed(conn: Conn) -> None:
    await show(conn, "fanin")
    frames = frames_of(conn)
    before = frames.event(SANDBOX, "fanin", await read(conn))
    acted = await act(conn, "fanin", "complete-child")
    broadcast = await frames.frame(SANDBOX, "fanin")  # what every open page is pushed
    assert broadcast is not before and f'data-ver="{acted.ver}"'.encode() in broadcast
    opened_after = frames.event(SANDBOX, "fanin", await read(conn))
    assert opened_after is broadcast


CROWD = 200  # pages of one class opening at once: well past FRESH_AT_ONCE


async def first_frame(port: int, cookie: str) -> bytes:
    """One page's stream, read until its first widget frame (then closed)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(f"GET /api/stream?widgets=fanin HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                     f"Cookie: {COOKIE}={cookie}\r\nAccept: text/event-stream\r\n\r\n".encode())
        return await asyncio.wait_for(reader.readuntil(b"event: widget"), 60)
    finally:
        writer.close()


def test_a_crowd_of_pages_opening_at_once_reads_through_a_bounded_number_of_connections(
        valkey_server: ValkeyProcess) -> None:
    with running(valkey_server.url, {"EMQLAB_STREAMS_PER_VISITOR": "0"}) as site:
        visitor = site.visitor()
        assert visitor.get("/api/widgets/fanin/state").status_code == 200  # landed
        cookie = str(visitor.cookies.get(COOKIE))
        port = int(site.url.rsplit(":", 1)[1])

        async def crowd() -> list[bytes]:
            await first_frame(port, cookie)  # the site's own connections (hub, heartbeat) opened
            before = len(site.redis().client_list())
            got = await asyncio.gather(*(first_frame(port, cookie) for _ in range(CROWD)))
            opened = len(site.redis().client_list()) - before
            # unbounded, each waiting read kept a pooled connection of its own (about one per page)
            assert opened <= FRESH_AT_ONCE, f"{opened} connections opened for {CROWD} pages"
            return got

        assert all(b"HTTP/1.1 200" in head for head in asyncio.run(crowd()))
