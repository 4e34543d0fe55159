"""The hub's subscription: one connection in subscribe mode, its replies parsed by hiredis.

Every sandbox write is a message to every worker; redis-py's `PubSub` spent ~7 µs of
its own on each (a tenth of an action's CPU), so messages are read in bulk and parsed
by `hiredis.Reader`. Only AUTH and the subscribe commands are sent.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Sequence
from typing import Any

import hiredis
from redis.asyncio.connection import SSLConnection, parse_url
from redis.exceptions import ConnectionError as RedisConnectionError

CONNECT_TIMEOUT = 1.0  # seconds; as the site's own pool (server/valkey/client.py)
READ_BYTES = 1 << 16

# (kind, channel, data): kind is "pmessage" or "message"
Message = tuple[str, str, str]


class Subscriber:
    """`async with Subscriber(url) as sub: await sub.subscribe(...); async for m in sub.messages(): …`"""

    def __init__(self, url: str) -> None:
        self.options: dict[str, Any] = dict(parse_url(url))
        self.reader = hiredis.Reader(encoding="utf-8", errors="surrogateescape")
        self.stream: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def __aenter__(self) -> Subscriber:
        options = self.options
        if "path" in options:
            opened = asyncio.open_unix_connection(options["path"])
        else:
            tls = ssl.create_default_context() if options.get("connection_class") is SSLConnection else None
            opened = asyncio.open_connection(options.get("host", "localhost"), options.get("port", 6379), ssl=tls)
        async with asyncio.timeout(CONNECT_TIMEOUT):
            self.stream, self.writer = await opened
            if options.get("password"):
                user = [options["username"]] if options.get("username") else []
                self._send("AUTH", *user, options["password"])
                await self._reply()
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.writer is not None:
            self.writer.close()

    async def subscribe(self, patterns: Sequence[str], channels: Sequence[str]) -> None:
        """PSUBSCRIBE and SUBSCRIBE, returning once Valkey confirmed each (no message is missed after)."""
        self._send("PSUBSCRIBE", *patterns)
        self._send("SUBSCRIBE", *channels)
        for _ in range(len(patterns) + len(channels)):
            await self._reply()

    async def messages(self) -> AsyncIterator[Message]:
        """Every message, as it comes; raises ConnectionError when the connection ends."""
        while True:
            reply = await self._reply()
            if isinstance(reply, list):
                if reply[0] == "pmessage" and len(reply) == 4:
                    yield "pmessage", reply[2], reply[3]
                elif reply[0] == "message" and len(reply) == 3:
                    yield "message", reply[1], reply[2]

    def _send(self, *args: str) -> None:
        assert self.writer is not None
        self.writer.write(hiredis.pack_command(args))  # type: ignore[arg-type]  # its stub types one argument

    async def _reply(self) -> Any:
        assert self.stream is not None
        while (reply := self.reader.gets()) is False:
            data = await self.stream.read(READ_BYTES)
            if not data:
                raise RedisConnectionError("Valkey closed the subscription")
            self.reader.feed(data)
        if isinstance(reply, hiredis.ReplyError):
            raise RedisConnectionError(f"Valkey refused the subscription: {reply}")
        return reply
