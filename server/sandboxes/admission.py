"""Admission: which sandboxes are live, and who may open a new one.

A sandbox is created lazily: a page visit only mints the cookie, and the
sandbox is registered (and so counts against the site's cap) when a widget
first asks for its state, its stream or an action. Admission is one script
(`scripts/admit.lua`), so two new visitors cannot both take the last place and
a flood cannot slip past its address's limit:

* a known sandbox is always admitted (its activity recorded);
* a new one is refused when its client address already opened
  `address_sandboxes` this window (-1), or when the site holds its cap and no
  never-used sandbox has been idle `unused_idle` seconds (0);
* when the site is full, the longest-idle never-used sandbox (one that never
  ran an action) is evicted to make room: abandoned visits go first, never a
  learner's work. The reaper removes the evicted sandbox's keys.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from server.emq.wire import Conn
from server.sandboxes import site_scripts
from server.sandboxes.sandbox import REGISTRY_KEY

# Same slot as REGISTRY_KEY: a key without braces hashes as a whole, so
# `{lab:sandboxes}` as a hashtag lands next to it on a cluster.
UNUSED_KEY = "{lab:sandboxes}:unused"
# Every sandbox that may hold keys (sandbox -> first admission, ms), same slot:
# admission is the one gate before any key of a sandbox is written, so the
# reaper finds orphans (an evicted or lost registry entry) without a scan.
HELD_KEY = "{lab:sandboxes}:held"
WINDOW = 600  # seconds: the window of the per-address count of new sandboxes

ADMITTED, FULL, ADDRESS_FULL = 1, 0, -1


@dataclass(frozen=True)
class Limits:
    cap: int
    address_cap: int = 0
    unused_idle: int = 60


def address_key(address: str, now: float) -> str:
    return f"{{lab:sandboxes}}:new:{address}:{int(now // WINDOW)}"


async def admit(conn: Conn, sandbox: str, limits: Limits, address: str = "unknown", used: bool = False) -> int | str:
    """ADMITTED, FULL, ADDRESS_FULL, or the id of the sandbox evicted to admit this one."""
    now = time.time()
    reply = await site_scripts.script(conn, "admit")(
        keys=[REGISTRY_KEY, UNUSED_KEY, address_key(address, now), HELD_KEY],
        args=[sandbox, int(now * 1000), limits.cap, limits.address_cap, int(used),
              limits.unused_idle * 1000, WINDOW * 2],
    )
    if isinstance(reply, bytes):
        reply = reply.decode()
    return reply if isinstance(reply, str) else int(reply)


async def forget_unused(conn: Conn, cutoff_ms: float) -> None:
    """Drop never-used entries idle since before `cutoff_ms` (the reaper's round)."""
    await conn.zremrangebyscore(UNUSED_KEY, "-inf", cutoff_ms)


__all__ = ["ADDRESS_FULL", "ADMITTED", "FULL", "HELD_KEY", "UNUSED_KEY", "Limits", "admit", "forget_unused"]
