"""An action's way in: admission, rate budgets and the activity record, riding
in the round trip that takes the widget's lock.

`guard.enter` spells every check out as separate commands; this is the same
set of checks arranged for the hot path:

* **Admission** (the site's sandbox cap, `admit.lua`) runs when this worker
  has not admitted the sandbox as used within the last minute. The registry's
  score is the sandbox's last activity for the reaper, whose idle limit is
  counted in tens of minutes: refreshing it once a minute loses nothing, and
  a worker that has not seen the sandbox admits it again.
* **The rest** is a `WayIn`: `activity.lua` on the sandbox's own slot (its
  meta record, its visitor budget, the progress record's expiry and a read of
  the widget's progress fields, which the action needs anyway), and
  `count.lua` for each budget on another slot (the address, a room). It is
  not sent here: the widget queues it in the same pipeline as its lock
  (`Widget.begin`), so the way in costs no round trip of its own, and judges
  the counts before the action runs (a refusal lets the lock go).

A page's read of a widget (`GET /api/widgets/<w>/state`) takes `glance`: the
admission as seen (again only when this worker has not admitted the sandbox
in the last RECENT_SEEN seconds, or as used in the last RECENT), and the
activity record's writes, which ride in the snapshot read's own round trip
(`Context.before`, `Widget._read_all`): one round trip for a page's read.

In a class acting in another sandbox (demo, together) the records span
several slots: the learner's own record and the room's expiry ride as plain
writes in the same round trip. Only an instructor watching a learner takes
`guard.enter`, which records no activity of the learner's.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request

from server.sandboxes import site_scripts
from server.valkey.scripts import Arg, Call
from server.web import guard, limits

RECENT = 60.0  # seconds a used admission stands for this worker
# ...and an unused one (a page reading its widgets): well inside the 60 s
# after which a never-used sandbox may be evicted, so a page being read is
# never idle by that measure; the widgets of one page load share one.
RECENT_SEEN = 10.0
REMEMBERED = 10_000  # sandboxes a worker remembers having admitted

ACTIVITY = site_scripts.pipelined("activity")
COUNT = site_scripts.pipelined("count")

# sandbox -> (when this worker admitted it, whether as used)
_admitted: OrderedDict[str, tuple[float, bool]] = OrderedDict()



@dataclass
class WayIn:
    """The way in's scripts, to be queued ahead of the widget's lock, and how
    to read their replies."""

    calls: list[Call]
    budgets: list[limits.Budget]
    # Plain writes on other slots (a class's records), sent first; their replies are not read.
    commands: list[tuple[Any, ...]] = field(default_factory=list)

    def judge(self, replies: list[Any]) -> list[Any]:
        """Refuse (429) past a budget; else the progress fields `activity.lua` read."""
        (counts, fields), *other_counts = replies[len(self.commands):]
        limits.judge_rates(self.budgets, [*counts, *other_counts])
        return list(fields)


def _recently_admitted(sandbox: str, used: bool = True) -> bool:
    """Admitted lately by this worker: as used (for an action), or at all,
    within RECENT_SEEN (for a page's read)."""
    found = _admitted.get(sandbox)
    if found is None:
        return False
    age, as_used = time.monotonic() - found[0], found[1]
    if used:
        return as_used and age < RECENT
    return age < (RECENT if as_used else RECENT_SEEN)


def _remember(sandbox: str, used: bool = True) -> None:
    if not used and _recently_admitted(sandbox, used=True):
        return  # a used admission stands: a read does not turn it back into an unused one
    _admitted[sandbox] = (time.monotonic(), used)
    _admitted.move_to_end(sandbox)
    while len(_admitted) > REMEMBERED:
        _admitted.popitem(last=False)


def forget(sandbox: str | None = None) -> None:
    """Drop what this worker remembers (a reset of the site's registry)."""
    if sandbox is None:
        _admitted.clear()
    else:
        _admitted.pop(sandbox, None)


async def enter(request: Request, sandbox: str, widget: str, progress_fields: list[str]) -> WayIn | None:
    """Admit the sandbox if this worker has not lately, and hand back the rest
    of the way in for the widget's first round trip (None where the slow path
    ran here, across slots, and read no progress fields)."""
    if not _recently_admitted(sandbox):
        await guard.admit_request(request, sandbox, used=True)
        _remember(sandbox)
    if guard.noted(request, "watching", None):
        await guard.enter(request, sandbox, widget)
        return None
    return way_in(request, sandbox, widget, progress_fields)


async def glance(request: Request, sandbox: str, widget: str) -> list[tuple[Any, ...]]:
    """A page's read of a widget (`GET .../state`): the sandbox admitted as
    seen when this worker has not lately, and the activity record's writes
    handed back, for the read's own round trip (`Context.before`)."""
    if not _recently_admitted(sandbox, used=False):
        await guard.admit_request(request, sandbox, used=False)
        _remember(sandbox, used=False)
    return guard.activity_commands(request, sandbox, widget)


def way_in(request: Request, sandbox: str, widget: str, progress_fields: list[str]) -> WayIn:
    """The activity record and the budgets of one action in the acting
    sandbox: the learner's own, or a class's (demo, together), where the
    learner's own record and the room's keys are kept alive beside it."""
    settings = request.app.state.settings
    visitor = guard.noted(request, "visitor", None) or sandbox
    spent = limits.budgets(request, visitor, sandbox)
    now = time.time()
    own = [b for b in spent if b.name == sandbox]
    others = [b for b in spent if b.name != sandbox]
    keys = [f"lab:{{{sandbox}}}:meta", f"lab:{{{sandbox}}}:progress", *(limits.rate_key(b.name, now) for b in own)]
    pairs: list[Arg] = guard.activity_fields(request, widget)
    args: list[Arg] = [settings.sandbox_ttl * 2, limits.RATE_WINDOW * 2, len(progress_fields), *progress_fields, *pairs]
    calls: list[Call] = [(ACTIVITY, keys, args)]
    calls += [(COUNT, [limits.rate_key(b.name, now)], [limits.RATE_WINDOW * 2]) for b in others]
    # activity.lua writes the acting sandbox's record; the learner's own (the
    # roster reads it) and a room's expiry ride beside it as plain writes
    commands = guard.activity_commands(request, sandbox, widget, acting=False, pairs=pairs)
    return WayIn(calls, [*own, *others], commands)
