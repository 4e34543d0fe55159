"""The machinery of the exercises' checks: each lands a flow (one parent, three children) with the course's scripts
and hands the learner's script one call of it.

``Run`` is one learner's run on one grader and the script time it spent (a budget across checks).
``Scene`` is one check's part: its queues, the keys it judges, and ``learner()``, the learner's
script under the watchdog, pictured before and after. Only that call is the learner's: everything
else goes through ``server.emq`` on the admin client.

``Family`` is the flow a check lands, and ``judge`` weighs the learner's last call against what a
check wants; the checks themselves are in ``fanin_checks`` and ``deliver_checks``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from redis.asyncio import Redis

from server.emq import flows, jobs, keyspace
from server.exercises import watchdog
from server.exercises.grader import Grader
from server.exercises.outcome import QUEUE, CheckResult, Picture, picture, rename
from server.exercises.watchdog import Erred, Halted, Replied


class CheckFailed(Exception):
    """A check's verdict against the script; ``str()`` is its one sentence."""


@dataclass(frozen=True)
class Check:
    """A named scenario; ``run`` lands it, judges it and returns its passing sentence."""

    name: str
    run: Callable[[Scene], Awaitable[str]]


@dataclass
class Run:
    """One learner's run on one grader, as the run's own Valkey user (``client``)."""

    grader: Grader
    client: Redis
    sha: str
    run_id: str
    spent: float = 0.0  # seconds of the learner's script so far


class Scene:
    """One check's scenario inside a run."""

    def __init__(self, run: Run, index: int) -> None:
        self.run = run
        self.index = index
        self.admin = run.grader.admin_client()  # the course's scripts run on it
        self.judged: list[str] = []
        self.step: str | None = None
        self.before: Picture | None = None
        self.after: Picture | None = None
        self.outcome: Replied | Erred | None = None
        self.shown: dict[str, str] = {}  # each queue of the scene -> how the course writes it

    def queue(self, role: str, shown: str = QUEUE) -> str:
        """A queue of this scene: ``<run>.<check>.<role>``, inside the run's pattern;
        ``shown`` is how the learner reads it (``emq:{q}:…``)."""
        queue = keyspace.check_queue(f"{self.run.run_id}.{self.index}.{role}")
        self.shown[queue] = shown
        return queue

    def in_picture(self, keys: Sequence[str]) -> None:
        """Keys the check reads: always in the picture, whatever else is there."""
        self.judged.extend(key for key in keys if key not in self.judged)

    @property
    def after_step(self) -> str:
        """`` after <the learner's last call>`` for a sentence, or nothing before the first."""
        return f" after {self.step}" if self.step else ""

    async def picture(self) -> Picture:
        return await picture(self.admin, self.judged, "emq:{" + f"{self.run.run_id}.{self.index}." + "*")

    async def learner(self, keys: Sequence[str], args: Sequence[str | int], step: str) -> None:
        """The learner's script in place of the course's, framed by two pictures: the check judges
        its ``outcome`` and the keys ``after`` (``checks.judge``)."""
        self.step = step
        self.before = await self.picture()
        self.after = None
        self.outcome = await self.call(keys, args)
        self.after = await self.picture()

    async def call(self, keys: Sequence[str], args: Sequence[str | int]) -> Replied | Erred:
        """One call of the learner's script on the grader, within the run's budget of script time."""
        run, budget = self.run, self.run.grader.limits.budget_ms
        if run.spent * 1000 >= budget:
            raise Halted(f"stopped: the script had used the run's {budget} ms of script time", lost=False)
        outcome, took = await watchdog.call(run.grader, run.client, run.sha, keys, args)
        run.spent += took
        return outcome

    def result(self, name: str, said: str) -> CheckResult:
        """A failed check, with the pictures of the learner's last call in it,
        its sentence written with the queues as the course writes them."""
        names = tuple(self.shown.items())
        return CheckResult(name=name, passed=False, said=rename(said, names), step=self.step,
                           before=self.before, after=self.after, names=names)


SHOWN_CHARS = 120  # a said quotes at most this much of a value: it is one sentence


def clip(text: str) -> str:
    """`text` whole, or its start cut at a word's end (never mid-word) with its length said."""
    if len(text) <= SHOWN_CHARS:
        return text
    start = text[:SHOWN_CHARS]
    if " " in start[SHOWN_CHARS // 2:] and not text[SHOWN_CHARS].isspace():
        start = start.rsplit(" ", 1)[0]
    return f"{start.rstrip()}… ({len(text):,} characters)"


# --- the flow the checks land -----------------------------------------------

LEASE_MS = 30_000
SETS = ("pending", "active", "dead")


@dataclass
class Family:
    """A parent in ``parent_queue`` with ``children`` in ``child_queue`` (the same queue or another)."""

    parent_queue: str
    child_queue: str
    parent: str
    children: tuple[str, ...]

    def __post_init__(self) -> None:
        self.parent_row = keyspace.job_key(self.parent_queue, self.parent)
        self.deps = keyspace.dependencies_key(self.parent_queue, self.parent)
        self.processed = keyspace.processed_key(self.parent_queue, self.parent)
        self.ignored = keyspace.ignored_key(self.parent_queue, self.parent)

    def parent_set(self, name: str) -> str:
        return keyspace.queue_key(self.parent_queue, name)

    def keys(self) -> list[str]:
        """Every key a check of this flow may judge, parent's first."""
        found = [self.parent_row, self.deps, self.processed, self.ignored, *map(self.parent_set, SETS)]
        if self.child_queue != self.parent_queue:
            found += [keyspace.queue_key(self.child_queue, name) for name in SETS]
            found.append(keyspace.outbox_key(self.child_queue))
        return found + [keyspace.job_key(self.child_queue, child) for child in self.children]


async def land(scene: Scene, family: Family, **per_child: dict[str, Any]) -> Family:
    """``family`` landed by one atomic ``enqueue_flow``, its keys judged; ``per_child`` adds fields to a named child."""
    scene.in_picture(family.keys())
    children = []
    for number, child in enumerate(family.children, 1):
        entry: dict[str, Any] = {"id": child, "payload": f"part {number}"}
        if family.child_queue != family.parent_queue:
            entry["queue"] = family.child_queue
        children.append(entry | per_child.get(child, {}))
    await flows.add(scene.admin, family.parent_queue,
                    {"parent": {"id": family.parent, "payload": "the whole"}, "children": children})
    return family


# Where a check may want the parent: its state, the state sets holding it, in words.
PARENT_AT = {
    "held": ("awaiting_children", (), "still held (awaiting_children, in no state set)"),
    "released": ("pending", ("pending",), "released (state pending, in pending)"),
    "claimed": ("active", ("active",), "to stay with the worker that claimed it (state active, in active only)"),
    "failed": ("failed", ("dead",), "failed (state failed, in dead)"),
}


def shown(value: str | None, missing: str = "no such key") -> str:
    return missing if value is None else clip(value)


def _said(scene: Scene, family: Family, want: str, value: Any) -> str | None:
    """One of ``judge``'s wants weighed: None when the learner's last call met it, else why not."""
    outcome, step, after = scene.outcome, scene.step, scene.after or Picture()
    if want == "reply":
        if isinstance(outcome, Erred):
            return f"expected {step} to answer {value}, the script stopped with the error: {clip(outcome.message)}"
        if isinstance(outcome, Replied) and outcome.value != value:
            return f"expected {step} to answer {value}, the script answered {clip(repr(outcome.value))}"
    elif want == "error":
        if isinstance(outcome, Replied):
            return f"expected {step} to answer an {value} error, the script answered {clip(repr(outcome.value))}"
        if isinstance(outcome, Erred) and not outcome.message.startswith(value):
            return f"expected {step} to answer an {value} error, the script answered: {clip(outcome.message)}"
    elif want == "deps":
        got = after.text(family.deps)
        if got != str(value):
            return f"expected :dependencies = {value}, Valkey holds {shown(got)} after {step}"
    elif want == "parent":
        return parent_said(scene, family, value)
    elif want == "unchanged":
        return _changed(scene)
    else:  # processed / ignored: (field, value) the hash holds, value None: no such field
        key, label, (name, held) = getattr(family, want), f":{want}", value
        got = after.field(key, name)
        if got != held and held is None:
            return f"expected no {name} in {label}, Valkey holds {name} = {shown(got)} after {step}"
        if got != held:
            return f"expected {label}[{name}] = {held}, Valkey holds {shown(got, 'no such field')} after {step}"
    return None


def parent_said(scene: Scene, family: Family, where: str) -> str | None:
    """The parent must be ``where`` (a ``PARENT_AT``); else the sentence says where Valkey holds it."""
    state, sets, words = PARENT_AT[where]
    picture = scene.after or Picture()
    got = picture.field(family.parent_row, "state")
    inside = tuple(name for name in SETS if picture.holds(family.parent_set(name), family.parent))
    if got == state and inside == sets:
        return None
    sets_held = "in " + " and ".join(inside) if inside else "in no state set"
    held = f"the parent with state {got or '(none)'}, {sets_held}"
    if got is None and picture.find(family.parent_row) is None:
        held = "no parent row"
    return f"expected the parent {words}, Valkey holds {held} after {scene.step}"


def _changed(scene: Scene) -> str | None:
    """No key of the scenario may differ between the two pictures."""
    earlier = {shot.name: shot for shot in (scene.before.keys if scene.before else ())}
    later = {shot.name: shot for shot in (scene.after or Picture()).keys}
    for name in sorted(set(earlier) | set(later)):
        was, now = earlier.get(name), later.get(name)
        if was == now:
            continue
        if now is None:
            return f"expected nothing to change, Valkey no longer holds {name} after {scene.step}"
        if was is None:
            return f"expected nothing to change, Valkey holds a new key {name} after {scene.step}"
        return (f"expected nothing to change, Valkey holds {name} = {clip(str(now.value))} "
                f"(it was {clip(str(was.value))}) after {scene.step}")
    return None


def judge(scene: Scene, family: Family, **wants: Any) -> None:
    """The learner's last call judged against ``wants`` in the order given, the first that fails
    saying the check's sentence: ``reply`` the integer it answered, ``error`` the code of the error it
    answered, ``deps`` :dependencies after it, ``parent`` where the parent is (a ``PARENT_AT``),
    ``processed`` / ``ignored`` a (field, value) that hash holds (value None: no such field),
    ``unchanged`` (True) no key of the scenario changed by it."""
    for want, value in wants.items():
        said = _said(scene, family, want, value)
        if said is not None:
            raise CheckFailed(said)


def expect_counted(scene: Scene, family: Family, child: str, value: str, left: int) -> None:
    """The learner's call counted ``child``: it answered 1, :dependencies is ``left``, ``value``
    is in :processed, and the parent stays held while any child is left."""
    judge(scene, family, reply=1, deps=left, processed=(child, value))
    if left > 0:
        judge(scene, family, parent="held")


async def claim(scene: Scene, queue: str, want: str) -> int:
    """Claim with the course's script; the scenario needs ``want`` next. Its token."""
    got = await jobs.claim(scene.admin, queue, LEASE_MS)
    if got is None or got[0] != want:
        handed = "nothing" if got is None else got[0]
        raise CheckFailed(f"expected {want} to be claimable next, the course's claim handed out {handed}"
                          f"{scene.after_step}")
    return got[1]
