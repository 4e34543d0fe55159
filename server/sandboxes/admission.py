"""Admission: a sandbox is registered (against the site's cap) before its first write, whatever the
door (a widget, a console line, an exercise run; not a page visit), and reaped the same way. One
script (`scripts/admit.lua`), so two visitors cannot both take the last place; a full site evicts
the longest-idle never-used sandbox, never a learner's work.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from server.emq.script import Call, Script
from server.emq.wire import Conn
from server.refusal import Refusal
from server.sandboxes.keys import REGISTRY_KEY

SCRIPTS = Path(__file__).resolve().parent / "scripts"
ADMIT = Script.from_file(SCRIPTS / "admit.lua")
TOUCH = Script.from_file(SCRIPTS / "touch.lua")
UNREGISTER_IF_IDLE = Script.from_file(SCRIPTS / "unregister_if_idle.lua")

# `{lab:sandboxes}` as a hashtag lands in REGISTRY_KEY's slot (a key without braces hashes whole).
UNUSED_KEY = "{lab:sandboxes}:unused"
# Every sandbox that may hold keys (-> first admission, ms): the reaper finds orphans without a scan.
HELD_KEY = "{lab:sandboxes}:held"
WINDOW = 600  # seconds: the window of the per-address count of new sandboxes

ADMITTED, FULL, ADDRESS_FULL = 1, 0, -1


class Full(Refusal):
    """No new sandbox can be admitted now (answered 503 with this sentence; retried in a minute)."""

    status, retry_after = 503, 60


class AddressFull(Full):
    """This address opened its share of new sandboxes (answered 429: the client may slow down)."""

    status = 429


@dataclass(frozen=True)
class Limits:
    cap: int
    address_cap: int = 0
    unused_idle: int = 60


def address_key(address: str, now: float) -> str:
    return f"{{lab:sandboxes}}:new:{address}:{int(now // WINDOW)}"


@dataclass(frozen=True)
class Door:
    """What admitting a sandbox needs besides its id (a caller may pipeline its `call`)."""

    limits: Limits
    address: str = "unknown"

    def call(self, sandbox: str, used: bool) -> Call:
        """`admit.lua` as a call to queue on a pipeline (its reply goes to `refuse`)."""
        now = time.time()
        return (ADMIT, [REGISTRY_KEY, UNUSED_KEY, address_key(self.address, now), HELD_KEY],
                [sandbox, int(now * 1000), self.limits.cap, self.limits.address_cap, int(used),
                 self.limits.unused_idle * 1000, WINDOW * 2])

    async def enter(self, conn: Conn, sandbox: str, used: bool) -> None:
        """Admit (one round trip) or raise `Full` / `AddressFull`."""
        script, keys, args = self.call(sandbox, used)
        refuse(await script.run(conn, keys, args))


def refuse(answer: object) -> None:
    """Raise what an `admit.lua` reply refuses (an error reply is raised as it is); nothing when admitted."""
    if isinstance(answer, Exception):
        raise answer
    if answer == FULL:
        raise Full("The site is full right now: too many learners at once. Try again in a few minutes.")
    if answer == ADDRESS_FULL:
        raise AddressFull("Too many new visitors from your address in the last minutes; try again later.")


def touch_call(sandbox: str, now_ms: int) -> Call:
    """`touch.lua`: the sandbox was used just now (kept from eviction)."""
    return (TOUCH, [REGISTRY_KEY, UNUSED_KEY], [sandbox, now_ms])
