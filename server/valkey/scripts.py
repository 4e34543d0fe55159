"""The site's own Lua scripts (not EchoMQ's): loaded once, run by SHA.

EchoMQ's scripts go through `server.emq.registry`. The site has a few of its
own (reading a widget's queue, admission); they are run the same way — by
SHA, loaded again on NOSCRIPT after a restart or SCRIPT FLUSH — but they are
also queued on pipelines. redis-py's pipelines check every script with a
SCRIPT EXISTS round trip before each execute; queuing a plain EVALSHA and
loading only on a NOSCRIPT reply keeps a pipeline at one round trip.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from redis.exceptions import NoScriptError

from server.emq.wire import Conn, Pipe

Arg = str | bytes | int | float


@dataclass
class SiteScript:
    """One .lua file of the site's, addressed by the SHA1 of its text."""

    path: Path
    source: str = field(init=False)
    sha: str = field(init=False)

    def __post_init__(self) -> None:
        self.source = self.path.read_text(encoding="utf-8")
        self.sha = hashlib.sha1(self.source.encode()).hexdigest()

    def queue(self, pipe: Pipe, keys: Sequence[str], args: Sequence[Arg]) -> None:
        """Queue one EVALSHA of this script on `pipe`."""
        pipe.execute_command("EVALSHA", self.sha, len(keys), *keys, *args)

    async def run(self, conn: Conn, keys: Sequence[str], args: Sequence[Arg]) -> Any:
        """Run it alone: one round trip, two after a NOSCRIPT."""
        try:
            return await conn.execute_command("EVALSHA", self.sha, len(keys), *keys, *args)
        except NoScriptError:
            await conn.script_load(self.source)
            return await conn.execute_command("EVALSHA", self.sha, len(keys), *keys, *args)


Call = tuple[SiteScript, Sequence[str], Sequence[Arg]]


async def execute(conn: Conn, pipe: Pipe, calls: Sequence[Call | None], answered: int = 0) -> list[Any]:
    """Execute `pipe`; a script answered NOSCRIPT is loaded and run again alone.

    `calls` lists, for each queued command after the first `answered` ones,
    the script call it was (or None for a plain command), so a NOSCRIPT reply
    can be retried; other error replies are raised as usual. The first
    `answered` replies are returned as they stand, errors included: the
    caller reads them itself.
    """
    replies = list(await pipe.execute(raise_on_error=False))
    for i, reply in enumerate(replies[answered:], answered):
        call = calls[i - answered] if i - answered < len(calls) else None
        if isinstance(reply, NoScriptError) and call is not None:
            script, keys, args = call
            replies[i] = await script.run(conn, keys, args)
        elif isinstance(reply, Exception):
            raise reply
    return replies
