"""Real Starlette requests for the web layer's pure parts, without a server:
an ASGI scope and a `receive` that hands out the body chunk by chunk and
counts what was read (so a test can tell a cap stopped reading)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request

from server.settings import Settings
from tests import services_stub


@dataclass
class Upload:
    """The body of one request as it arrives: `chunks`, then (optionally) a hang-up."""

    chunks: list[bytes] = field(default_factory=list)
    disconnect: bool = False
    read: int = 0  # how many messages the request took

    async def receive(self) -> dict[str, Any]:
        self.read += 1
        if self.read <= len(self.chunks):
            more = self.read < len(self.chunks) or self.disconnect
            return {"type": "http.request", "body": self.chunks[self.read - 1], "more_body": more}
        return {"type": "http.disconnect"}


def app_with(settings: Settings | None = None, **state: Any) -> Starlette:
    """An app whose services hold the site's settings and whatever else a guard reads."""
    return services_stub.on(Starlette(), settings=settings or Settings(), **state)


def request(
    headers: dict[str, str] | None = None,
    upload: Upload | None = None,
    app: Starlette | None = None,
    state: dict[str, Any] | None = None,
    host: str = "lab.example",
    scheme: str = "http",
    client: str = "127.0.0.1",
    method: str = "POST",
) -> Request:
    """A request to / on `host` from `client`, with these headers, this body and this request state."""
    sent = {"host": host, **(headers or {})}
    scope = {
        "type": "http",
        "method": method,
        "scheme": scheme,
        "path": "/",
        "raw_path": b"/",
        "query_string": b"",
        "server": (host, 80),
        "client": (client, 40000),
        "headers": [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in sent.items()],
        "app": app or app_with(),
        "state": dict(state or {}),
    }
    return Request(scope, (upload or Upload()).receive)
