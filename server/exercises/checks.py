"""The exercises' checks: each lands a flow (one parent, three children) with the course's scripts
and hands the learner's script one call of it.

``Run`` is one learner's run on one grader and the script time it spent (a budget across checks).
``Scene`` is one check's part: its queues, the keys it judges, and ``learner()``, the learner's
script under the watchdog, pictured before and after. Only that call is the learner's: everything
else goes through ``server.emq`` on the admin client.

``FANIN_CHECKS`` judge a learner's ``complete``: the fan-in of the same-queue flow JOBreport ←
JOBpart1..3, claimed with the course's ``claim``, each call what ``jobs.complete`` would send
``complete.lua``. The last two put the parent where ``release_parent`` refuses to release it
(failed, as ``fail_parent`` leaves one; released early, as the second exercise's ``complete``
does, then claimed): a fan-in that releases at zero without looking at the parent's state fails them.

``DELIVER_CHECKS`` judge a learner's ``flow_deliver``, the Pump's half on the parent's slot: the
cross-queue flow JOBorder1 (``<run>.<n>.orders``) ← JOBmail1..3 (``<run>.<n>.mail``), children
finished with the course's ``complete`` or ``fail`` (each leaves an outbox entry), the outbox read
as the Pump does, each entry handed over with the KEYS/ARGV ``pump.deliver_one`` sends
(``deliver_call`` mirrors it; the course's script passing every check keeps the two in step).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from redis.asyncio import Redis

from server.emq import flows, jobs, keyspace, pump
from server.exercises.grader import Erred, Grader, Halted, Replied
from server.exercises.outcome import PARENT_QUEUE, QUEUE, CheckResult, Picture, picture, rename


class CheckFailed(Exception):
    """A check's verdict against the script; ``said`` is its one sentence."""

    def __init__(self, said: str) -> None:
        super().__init__(said)
        self.said = said


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
        outcome, took = await run.grader.call(run.client, run.sha, keys, args)
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

    def spec(self, **per_child: dict[str, Any]) -> dict[str, Any]:
        """The flow as ``flows.add`` takes it; ``per_child`` adds fields to a named child."""
        children = []
        for number, child in enumerate(self.children, 1):
            entry: dict[str, Any] = {"id": child, "payload": f"part {number}"}
            if self.child_queue != self.parent_queue:
                entry["queue"] = self.child_queue
            children.append(entry | per_child.get(child, {}))
        return {"parent": {"id": self.parent, "payload": "the whole"}, "children": children}


async def land(scene: Scene, family: Family, **per_child: dict[str, Any]) -> Family:
    """``family`` landed by one atomic ``enqueue_flow``, its keys judged."""
    scene.in_picture(family.keys())
    await flows.add(scene.admin, family.parent_queue, family.spec(**per_child))
    return family


# Where a check may want the parent: its state, the state sets holding it, in words.
PARENT_AT = {
    "held": ("awaiting_children", (), "still held (awaiting_children, in no state set)"),
    "released": ("pending", ("pending",), "released (state pending, in pending)"),
    "claimed": ("active", ("active",), "to stay with the worker that claimed it (state active, in active only)"),
    "failed": ("failed", ("dead",), "failed (state failed, in dead)"),
}


def shown(value: str | None) -> str:
    return "no such key" if value is None else clip(value)


def _reply(scene: Scene, family: Family, want: int) -> str | None:
    outcome, step = scene.outcome, scene.step
    if isinstance(outcome, Erred):
        return f"expected {step} to answer {want}, the script stopped with the error: {clip(outcome.message)}"
    if isinstance(outcome, Replied) and outcome.value != want:
        return f"expected {step} to answer {want}, the script answered {clip(repr(outcome.value))}"
    return None


def _error(scene: Scene, family: Family, code: str) -> str | None:
    outcome, step = scene.outcome, scene.step
    if isinstance(outcome, Replied):
        return f"expected {step} to answer an {code} error, the script answered {clip(repr(outcome.value))}"
    if isinstance(outcome, Erred) and not outcome.message.startswith(code):
        return f"expected {step} to answer an {code} error, the script answered: {clip(outcome.message)}"
    return None


def _deps(scene: Scene, family: Family, want: int) -> str | None:
    got = (scene.after or Picture()).text(family.deps)
    if got == str(want):
        return None
    return f"expected :dependencies = {want}, Valkey holds {shown(got)} after {scene.step}"


def _field(scene: Scene, key: str, label: str, field: str, want: str | None) -> str | None:
    """``label`` (e.g. ``:processed``) must hold ``want`` under ``field`` (None: no such field)."""
    got = (scene.after or Picture()).field(key, field)
    if got == want:
        return None
    if want is None:
        return f"expected no {field} in {label}, Valkey holds {field} = {shown(got)} after {scene.step}"
    held = "no such field" if got is None else clip(got)
    return f"expected {label}[{field}] = {want}, Valkey holds {held} after {scene.step}"


def _parent(scene: Scene, family: Family, where: str) -> str | None:
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


def _unchanged(scene: Scene, family: Family, _: object) -> str | None:
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


EXPECT: dict[str, Callable[[Scene, Family, Any], str | None]] = {
    "reply": _reply, "error": _error, "deps": _deps, "parent": _parent, "unchanged": _unchanged,
    "processed": lambda scene, family, pair: _field(scene, family.processed, ":processed", *pair),
    "ignored": lambda scene, family, pair: _field(scene, family.ignored, ":ignored", *pair),
}


def judge(scene: Scene, family: Family, **wants: Any) -> None:
    """The learner's last call judged against ``wants`` in the order given, the first that fails
    saying the check's sentence: ``reply`` the integer it answered, ``error`` the code of the error it
    answered, ``deps`` :dependencies after it, ``parent`` where the parent is (a ``PARENT_AT``),
    ``processed`` / ``ignored`` a (field, value) that hash holds (value None: no such field),
    ``unchanged`` (True) no key of the scenario changed by it."""
    for want, value in wants.items():
        said = EXPECT[want](scene, family, value)
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


# --- fan-in: the learner's complete ----------------------------------------

REPORT = "JOBreport"
PARTS = ("JOBpart1", "JOBpart2", "JOBpart3")
HELD_ONLY = "only a parent still held (awaiting_children) is released"


def pages_of(child: str) -> str:
    return f"pages of {child}"


async def reports(scene: Scene) -> Family:
    queue = scene.queue("reports")
    return await land(scene, Family(queue, queue, REPORT, PARTS))


async def completion_call(scene: Scene, family: Family, child: str, token: int) -> tuple[list[str], list[str]]:
    """The KEYS/ARGV ``jobs.complete`` would send for ``child`` now."""
    line = await jobs.lineage(scene.admin, family.child_queue, child)
    return jobs.complete_call(family.child_queue, child, token, line, pages_of(child))


async def complete(scene: Scene, family: Family, child: str, token: int, step: str) -> None:
    await scene.learner(*await completion_call(scene, family, child, token), step)


async def counted(scene: Scene, family: Family, child: str, left: int) -> None:
    """Claim ``child``, complete it with the learner's script, and judge that it counted."""
    token = await claim(scene, family.child_queue, child)
    await complete(scene, family, child, token, f"the completion of {child}")
    expect_counted(scene, family, child, pages_of(child), left)


async def last_of_two_counted(scene: Scene) -> tuple[Family, int]:
    """JOBpart1 and JOBpart2 counted by the course's complete, JOBpart3 claimed; its token."""
    family = await reports(scene)
    for child in PARTS[:2]:
        token = await claim(scene, family.child_queue, child)
        await jobs.complete(scene.admin, family.child_queue, child, token, pages_of(child))
    return family, await claim(scene, family.child_queue, PARTS[2])


async def last_kept(scene: Scene, family: Family, token: int, step: str, where: str, why: str) -> None:
    """The last child's completion by the learner's script counts (1, :dependencies 0, its result)
    and leaves the parent ``where``; else the rule the script broke is said after where it is."""
    await complete(scene, family, PARTS[2], token, step)
    expect_counted(scene, family, PARTS[2], pages_of(PARTS[2]), 0)
    said = _parent(scene, family, where)
    if said is not None:
        raise CheckFailed(f"{said}: {HELD_ONLY}, and {why}")


async def three_parts(scene: Scene) -> str:
    family = await reports(scene)
    for done, child in enumerate(PARTS, 1):
        await counted(scene, family, child, len(PARTS) - done)
    return "each child was counted once: :dependencies went 3 → 2 → 1 → 0 and :processed holds the three results"


async def last_part(scene: Scene) -> str:
    family, token = await last_of_two_counted(scene)
    await complete(scene, family, PARTS[2], token, f"the completion of {PARTS[2]}, the last child")
    judge(scene, family, reply=1, deps=0, parent="released")
    return "the parent was released after the third child: it is in pending with state pending"


async def redelivered(scene: Scene) -> str:
    family = await reports(scene)
    child = PARTS[0]
    token = await claim(scene, family.child_queue, child)
    keys, args = await completion_call(scene, family, child, token)
    await scene.learner(keys, args, f"the completion of {child}")
    judge(scene, family, reply=1, deps=2)
    await scene.learner(keys, args, f"the same completion of {child} sent a second time")
    judge(scene, family, deps=2, reply=0, unchanged=True)
    return (f"the completion of {child} sent a second time answered 0 and changed nothing: "
            ":dependencies stayed 2")


async def lapse(scene: Scene, queue: str, job_id: str) -> None:
    """The job's lease runs out: its deadline is wound back, then the course's
    ``requeue_lapsed`` hands it back to pending (its token unchanged)."""
    await scene.admin.zadd(keyspace.queue_key(queue, "active"), {job_id: 1}, xx=True)
    await jobs.requeue_lapsed(scene.admin, queue)


async def lapsed(scene: Scene) -> str:
    family = await reports(scene)
    for done, child in enumerate(PARTS[:2], 1):
        await counted(scene, family, child, len(PARTS) - done)
    late = PARTS[2]
    token = await claim(scene, family.child_queue, late)
    await lapse(scene, family.child_queue, late)
    step = f"the late completion of {late} (its lease had lapsed and it was back in pending)"
    await complete(scene, family, late, token, step)
    judge(scene, family, deps=1, parent="held", processed=(late, None))
    return (f"the late completion of {late} counted nothing: :dependencies stayed 1 "
            "and the parent stayed held")


async def stale(scene: Scene) -> str:
    family = await reports(scene)
    child = PARTS[0]
    old = await claim(scene, family.child_queue, child)
    await lapse(scene, family.child_queue, child)
    new = await claim(scene, family.child_queue, child)
    step = f"the completion of {child} with the stale token {old} (its row holds attempts {new})"
    await complete(scene, family, child, old, step)
    judge(scene, family, error="EMQSTALE", unchanged=True)
    return f"the completion with the stale token {old} answered EMQSTALE and wrote nothing"


async def missing_row(scene: Scene) -> str:
    family = await reports(scene)
    ghost = "JOBpart9"
    # The call a worker holding a job that never landed would send: the
    # same-queue layout, naming the real parent.
    line = jobs.Lineage(mode="sq", parent=REPORT, parent_queue=family.parent_queue, policy="fp")
    keys, args = jobs.complete_call(family.child_queue, ghost, 1, line, pages_of(ghost))
    await scene.learner(keys, args, f"the completion of {ghost} (a job with no row)")
    judge(scene, family, reply=0, unchanged=True)
    return f"the completion of {ghost}, which has no row, answered 0 and wrote nothing"


async def already_failed(scene: Scene) -> str:
    family, token = await last_of_two_counted(scene)
    # meanwhile an operator gave up on the flow: the parent failed, as fail_parent leaves one
    await scene.admin.hset(family.parent_row, mapping={"state": "failed", "error": "given up by an operator"})
    await scene.admin.zadd(family.parent_set("dead"), {REPORT: 1})
    step = f"the completion of {PARTS[2]}, the last child, after the parent had failed"
    await last_kept(scene, family, token, step, "failed", "this one had failed already")
    return (f"the completion of {PARTS[2]} counted it (:dependencies 0) and left the failed parent "
            "failed, in dead")


async def already_released(scene: Scene) -> str:
    family, token = await last_of_two_counted(scene)
    # released too early (as the second exercise's complete does), then a worker claims it
    await scene.admin.zadd(family.parent_set("pending"), {REPORT: 0})
    await scene.admin.hset(family.parent_row, "state", "pending")
    await claim(scene, family.parent_queue, REPORT)
    step = f"the completion of {PARTS[2]}, the last child, after a worker had claimed the released parent"
    await last_kept(scene, family, token, step, "claimed", "this one was released and claimed already")
    return (f"the completion of {PARTS[2]} counted it (:dependencies 0) and left the parent "
            "with the worker that claimed it")


FANIN_CHECKS = (
    Check("three children", three_parts),
    Check("the last child", last_part),
    Check("a redelivered completion", redelivered),
    Check("a completion after the lease lapsed", lapsed),
    Check("a stale token", stale),
    Check("a missing row", missing_row),
    Check("a parent already failed", already_failed),
    Check("a parent already released", already_released),
)


# --- deliver: the learner's flow_deliver -------------------------------------

ORDER = "JOBorder1"
MAILS = ("JOBmail1", "JOBmail2", "JOBmail3")


def sent(child: str) -> str:
    return f"sent {child}"


def bounced(child: str) -> str:
    return f"{child} bounced"


def deliver_call(entry: pump.OutboxEntry) -> tuple[list[str], list[str]]:
    """The KEYS/ARGV ``pump.deliver_one`` runs ``flow_deliver`` with for ``entry``."""
    queue, parent = entry.parent_queue, entry.parent
    keys = [
        keyspace.dependencies_key(queue, parent),
        keyspace.processed_key(queue, parent),
        keyspace.job_key(queue, parent),
        keyspace.ignored_key(queue, parent),
        keyspace.queue_key(queue, "dead"),
    ]
    return keys, [entry.child, entry.value, parent, keyspace.base(queue), entry.kind, entry.policy]


async def orders(scene: Scene, **per_child: dict[str, Any]) -> Family:
    family = Family(scene.queue("orders", shown=PARENT_QUEUE), scene.queue("mail"), ORDER, MAILS)
    return await land(scene, family, **per_child)


async def finish(scene: Scene, family: Family, child: str, *, fails: bool = False) -> str:
    """Claim ``child`` and complete it (or fail it at the cap) with the course's
    scripts; returns the outbox entry that left, as the Pump reads it."""
    token = await claim(scene, family.child_queue, child)
    if fails:
        await jobs.fail(scene.admin, family.child_queue, child, token, bounced(child), max_attempts=1)
    else:
        await jobs.complete(scene.admin, family.child_queue, child, token, sent(child))
    page = await pump.read_page(scene.admin, family.child_queue, 1)
    if not page:
        raise CheckFailed(f"expected an entry for {child} in the outbox, the outbox is empty")
    return page[0]


async def deliver(scene: Scene, family: Family, raw: str, step: str) -> None:
    """Hand one raw entry of the mail queue's outbox to the learner's script,
    after the Pump's own check of it (``pump.trusted``)."""
    await scene.learner(*deliver_call(pump.trusted(raw, family.child_queue, None)), step)


async def three_mails(scene: Scene) -> str:
    family = await orders(scene)
    for done, child in enumerate(MAILS, 1):
        raw = await finish(scene, family, child)
        await deliver(scene, family, raw, f"the delivery of {child}'s completion")
        expect_counted(scene, family, child, sent(child), len(MAILS) - done)
        await pump.trim(scene.admin, family.child_queue, [raw])  # the Pump's trim after a page that delivered
    return ("each delivery counted its child once: :dependencies went 3 → 2 → 1 → 0 "
            "and :processed holds the three results")


async def last_finished(scene: Scene) -> tuple[Family, str]:
    """The first two children finished and delivered by the course's Pump, the last one
    finished: the flow, and the last child's outbox entry."""
    family = await orders(scene)
    for child in MAILS[:2]:
        await finish(scene, family, child)
        await pump.deliver_flow_completions(scene.admin, family.child_queue, 10)
    return family, await finish(scene, family, MAILS[2])


async def last_mail(scene: Scene) -> str:
    family, raw = await last_finished(scene)
    await deliver(scene, family, raw, f"the delivery of {MAILS[2]}'s completion, the last child")
    judge(scene, family, reply=1, deps=0, parent="released")
    return "the parent was released after the last delivery: it is in pending with state pending"


async def crash_before_trim(scene: Scene) -> str:
    family = await orders(scene)
    child = MAILS[0]
    raw = await finish(scene, family, child)
    await deliver(scene, family, raw, f"the first delivery of {child}")
    judge(scene, family, reply=1, deps=2)
    # the Pump crashes here, before its trim: the next tick reads the same entry
    await deliver(scene, family, raw, f"the second delivery of {child} (a crash before trim)")
    judge(scene, family, deps=2, reply=2, unchanged=True)
    return (f"the second delivery of {child} after a crash before trim answered 2 and decremented nothing: "
            ":dependencies stayed 2")


async def released_once(scene: Scene) -> str:
    family, raw = await last_finished(scene)
    last = MAILS[2]
    await deliver(scene, family, raw, f"the delivery of {last}'s completion")
    judge(scene, family, reply=1, parent="released")
    # a crash before trim; meanwhile a worker claims the released parent
    await claim(scene, family.parent_queue, ORDER)
    await deliver(scene, family, raw, f"the second delivery of {last}, after a worker claimed the parent")
    judge(scene, family, parent="claimed", deps=0, reply=2)
    return ("the parent was released once: the repeated last entry answered 2 and left it "
            "with the worker that claimed it")


async def ignored_failure(scene: Scene) -> str:
    child = MAILS[0]
    family = await orders(scene, **{child: {"ignore_dependency_on_failure": True}})
    raw = await finish(scene, family, child, fails=True)
    await deliver(scene, family, raw, f"the delivery of {child}'s failure (policy: ignore the dependency)")
    judge(scene, family, reply=1, deps=2, ignored=(child, bounced(child)), processed=(child, None), parent="held")
    await deliver(scene, family, raw, f"the second delivery of {child}'s failure (a crash before trim)")
    judge(scene, family, deps=2, reply=2)
    return (f"the ignored failure of {child} went into :ignored and counted once: "
            ":dependencies went 3 → 2 and stayed 2 when it came again")


async def failing_parent(scene: Scene) -> str:
    family = await orders(scene)
    child = MAILS[0]
    raw = await finish(scene, family, child, fails=True)
    await deliver(scene, family, raw, f"the delivery of {child}'s failure (policy: fail the parent)")
    judge(scene, family, reply=1, parent="failed", deps=3)
    await deliver(scene, family, raw, f"the second delivery of {child}'s failure")
    judge(scene, family, reply=2, unchanged=True)
    return (f"the failure of {child} failed the parent (state failed, in dead) without counting it, "
            "and its second delivery changed nothing")


async def missing_parent(scene: Scene) -> str:
    family = await orders(scene)
    ghost = "JOBorder9"
    entry = pump.OutboxEntry(kind="completed", child=MAILS[0], child_queue=family.child_queue,
                             value=sent(MAILS[0]), parent=ghost, parent_queue=family.parent_queue, policy="fp")
    nobody = Family(family.parent_queue, family.child_queue, ghost, ())
    scene.in_picture([nobody.parent_row, nobody.deps, nobody.processed])
    step = f"the delivery of an entry for {ghost} (a parent with no row)"
    await deliver(scene, family, pump.encode_entry(entry), step)
    judge(scene, family, reply=0, unchanged=True)
    return f"the entry for {ghost}, which has no row, answered 0 and wrote nothing, so the Pump stops there"


DELIVER_CHECKS = (
    Check("three children", three_mails),
    Check("the last child", last_mail),
    Check("a crash before trim", crash_before_trim),
    Check("released once", released_once),
    Check("an ignored failure", ignored_failure),
    Check("a failure that fails the parent", failing_parent),
    Check("a missing parent", missing_parent),
)
