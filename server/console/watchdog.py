"""The console's watchdog: a course script run from the console answers within `SCRIPT_MS`, or the
site sends SCRIPT KILL to its node (heard past `busy-reply-threshold`, the managed Valkey's
`long_script.BUSY_REPLY_MS`). A backstop: every script bounds its work (includes/guards.lua). A
script that wrote cannot be stopped (`UNKILLABLE`): it is waited for and logged. EMQ.* is not watched.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable
from typing import Any, Final

from redis.asyncio.cluster import ClusterNode

from server.console.allow import Refusal
from server.emq.wire import Conn
from server.valkey.long_script import ask_script_kill

log = logging.getLogger("emqlab.console")

SCRIPT_MS: Final = 250  # a console script's budget: the course's take well under a millisecond
KILL_WAIT_S: Final = 6.0  # SCRIPT KILL is heard after busy-reply-threshold (an external Valkey's: 5 s by default)
STOPPED: Final = ("{script} ran past the console's {ms} ms budget, so the site stopped it with SCRIPT KILL before "
                  "it wrote anything: nothing was written. The course's scripts answer at once; check the counts "
                  "and arguments you gave it.")


async def watched(call: Awaitable[Any], admin: Conn, node: ClusterNode | None, script: str,
                  budget_ms: int = SCRIPT_MS) -> Any:
    """The reply of `call`; `Refusal` 422 when SCRIPT KILL stopped it past `budget_ms`."""
    task = asyncio.ensure_future(call)
    await asyncio.wait({task}, timeout=budget_ms / 1000)
    if task.done():
        return task.result()
    answer = await ask_script_kill(admin, KILL_WAIT_S, node)
    if answer == "OK":
        await asyncio.wait({task}, timeout=KILL_WAIT_S)  # its reply: Valkey's "Script killed by user"
        if not task.done():
            task.cancel()
        with contextlib.suppress(BaseException):
            await task
        log.warning("console script %s ran past %d ms: stopped with SCRIPT KILL", script, budget_ms)
        raise Refusal(422, STOPPED.format(script=script, ms=budget_ms), "stopped")
    if answer != "NOTBUSY":  # it wrote (UNKILLABLE), or Valkey did not answer: nothing to do but wait
        log.error("console script %s ran past %d ms and SCRIPT KILL answered %s", script, budget_ms, answer)
    return await task
