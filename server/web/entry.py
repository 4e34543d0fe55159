"""An action's way in: admission, rate budgets and the activity record in one round trip.

`guard.enter` spells every check out as separate commands; this is the same
set of checks arranged for the hot path:

* **Admission** (the site's sandbox cap, `admit.lua`) runs when this worker
  has not admitted the sandbox as used within the last minute. The registry's
  score is the sandbox's last activity for the reaper, whose idle limit is
  counted in tens of minutes: refreshing it once a minute loses nothing, and
  a worker that has not seen the sandbox admits it again.
* **The rest** is one pipeline: `activity.lua` on the sandbox's own slot
  (its meta record, its visitor budget, the progress record's expiry and a
  read of the widget's progress fields, which the action needs anyway), and
  `count.lua` for each budget on another slot (the address, a room).

Inside a class acting in another sandbox (demo, together) or while an
instructor watches, the records span several slots: `guard.enter` does it.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from typing import Any

from redis.exceptions import NoScriptError
from starlette.requests import Request

from server.sandboxes import site_scripts
from server.web import guard, limits

RECENT = 60.0  # seconds a used admission stands for this worker
REMEMBERED = 10_000  # sandboxes a worker remembers having admitted

_admitted: OrderedDict[str, float] = OrderedDict()


def _recently_admitted(sandbox: str) -> bool:
    at = _admitted.get(sandbox)
    return at is not None and time.monotonic() - at < RECENT


def _remember(sandbox: str) -> None:
    _admitted[sandbox] = time.monotonic()
    _admitted.move_to_end(sandbox)
    while len(_admitted) > REMEMBERED:
        _admitted.popitem(last=False)


def forget(sandbox: str | None = None) -> None:
    """Drop what this worker remembers (a reset of the site's registry)."""
    if sandbox is None:
        _admitted.clear()
    else:
        _admitted.pop(sandbox, None)


async def enter(request: Request, sandbox: str, widget: str, progress_fields: list[str]) -> list[Any] | None:
    """Admit, count and record one action; the widget's progress fields read
    on the way (None where the slow path ran and did not read them)."""
    if not _recently_admitted(sandbox):
        await guard.admit_request(request, sandbox, used=True)
        _remember(sandbox)
    visitor = getattr(request.state, "visitor", None) or sandbox
    if visitor != sandbox or guard.room_of(request) or getattr(request.state, "watching", None):
        await guard.enter(request, sandbox, widget)
        return None
    return await _one_round_trip(request, sandbox, widget, progress_fields)


async def _one_round_trip(request: Request, sandbox: str, widget: str, progress_fields: list[str]) -> list[Any]:
    settings = request.app.state.settings
    conn = request.app.state.conn
    spent = limits.budgets(request, sandbox, sandbox)
    now = time.time()
    own = [b for b in spent if b.name == sandbox]
    others = [b for b in spent if b.name != sandbox]
    meta: dict[str, Any] = {"widget": widget, "seen": round(now, 3)}
    page = guard.page_of(request)
    if page:
        meta["page"] = page
    keys = [f"lab:{{{sandbox}}}:meta", f"lab:{{{sandbox}}}:progress", *(limits.rate_key(b.name, now) for b in own)]
    args: list[Any] = [settings.sandbox_ttl * 2, limits.RATE_WINDOW * 2, len(progress_fields), *progress_fields]
    args += [item for pair in meta.items() for item in pair]
    calls: list[tuple[str, list[Any]]] = [("activity", [len(keys), *keys, *args])]
    calls += [("count", [1, limits.rate_key(b.name, now), limits.RATE_WINDOW * 2]) for b in others]
    replies = await _run(conn, calls)
    (counts, fields), *other_counts = replies
    limits.judge_rates([*own, *others], [*counts, *other_counts])
    return list(fields)


async def _run(conn: Any, calls: list[tuple[str, list[Any]]]) -> list[Any]:
    """Send the site scripts' EVALSHAs in one pipeline; one that answers
    NOSCRIPT (after a restart or SCRIPT FLUSH) did not run, so it is loaded
    and run again alone. Other error replies are raised."""
    async with conn.pipeline(transaction=False) as pipe:
        for name, rest in calls:
            pipe.execute_command("EVALSHA", site_scripts.script(conn, name).sha, *rest)
        replies = list(await pipe.execute(raise_on_error=False))
    for i, reply in enumerate(replies):
        if isinstance(reply, NoScriptError):
            name, rest = calls[i]
            await conn.script_load(site_scripts.source(name))
            replies[i] = await conn.execute_command("EVALSHA", site_scripts.script(conn, name).sha, *rest)
        elif isinstance(reply, Exception):
            raise reply
    return replies
