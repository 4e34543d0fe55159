"""One Lua script and the one way the site runs scripts: EVALSHA, loading it on NOSCRIPT.

In a pipeline (`execute`) that retry runs after the other calls, so one pipeline's calls
must not depend on each other's effects. EchoMQ refusals raise typed (`errors.translate`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from redis.asyncio.cluster import RedisCluster
from redis.exceptions import NoScriptError, ResponseError

from server.emq.errors import EmqError, translate
from server.emq.includes import expand
from server.emq.wire import Conn, Pipe

Arg = str | bytes | int | float


@dataclass(frozen=True)
class Script:
    """A script as Valkey runs it: `source` (includes expanded) and its `sha`."""

    name: str
    source: str

    @cached_property
    def sha(self) -> str:
        # hashed once: a click sends half a dozen scripts, and the SHA1 of their text was 3% of it
        return hashlib.sha1(self.source.encode("utf-8")).hexdigest()

    @classmethod
    def from_file(cls, path: Path) -> Script:
        """A script from its file, `-- @include` markers expanded from `includes/` beside it."""
        return cls(path.stem, expand(path.name, path.read_text(encoding="utf-8"), path.parent))

    async def run(self, conn: Conn, keys: Sequence[str], args: Sequence[Arg]) -> Any:
        """EVALSHA; on NOSCRIPT, load and send it again. EchoMQ refusals raise typed."""
        try:
            try:
                return await conn.execute_command("EVALSHA", self.sha, len(keys), *keys, *args)
            except NoScriptError:
                await self.load(conn, keys)
                return await conn.execute_command("EVALSHA", self.sha, len(keys), *keys, *args)
        except ResponseError as exc:
            raise translate(exc) from exc

    def queue(self, pipe: Pipe, keys: Sequence[str], args: Sequence[Arg]) -> None:
        """Queue one EVALSHA on a pipeline (send it with `execute`)."""
        pipe.execute_command("EVALSHA", self.sha, len(keys), *keys, *args)

    async def load(self, conn: Conn, keys: Sequence[str] = ()) -> None:
        """SCRIPT LOAD where the call goes: the node owning the first key on a cluster."""
        if isinstance(conn, RedisCluster) and keys:
            node = conn.get_node_from_key(keys[0])
            await conn.execute_command("SCRIPT LOAD", self.source, target_nodes=node)
        else:
            await conn.execute_command("SCRIPT LOAD", self.source)


Call = tuple[Script, Sequence[str], Sequence[Arg]]


async def execute(conn: Conn, pipe: Pipe, calls: Sequence[Call | None]) -> list[Any]:
    """Send `pipe`; `calls[i]` is the script call queued i-th (None: a plain command). A NOSCRIPT
    is retried alone; other error replies are returned in place, typed (see `raise_first`)."""
    replies = list(await pipe.execute(raise_on_error=False))
    for i, reply in enumerate(replies):
        call = calls[i] if i < len(calls) else None
        if isinstance(reply, NoScriptError) and call is not None:
            script, keys, args = call
            try:
                replies[i] = await script.run(conn, keys, args)
            except (ResponseError, EmqError) as exc:
                replies[i] = exc
        elif isinstance(reply, ResponseError):
            replies[i] = translate(reply)
    return replies


def raise_first(replies: Sequence[Any]) -> list[Any]:
    """The replies, or the first error among them raised."""
    for reply in replies:
        if isinstance(reply, Exception):
            raise reply
    return list(replies)
