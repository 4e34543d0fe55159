"""The checks of a learner's ``flow_deliver``: the Pump's half on the parent's slot.

Each check lands the cross-queue flow JOBorder1 (``<run>.<n>.orders``) ← JOBmail1..3
(``<run>.<n>.mail``) with the course's scripts, finishes children with its ``claim`` and
``complete`` or ``fail`` (each leaves an outbox entry), reads the outbox as the Pump does, and
hands each entry to the learner's script with the KEYS/ARGV ``pump.deliver_one`` sends
(``deliver_call`` mirrors it; the course's script passing every check keeps the two in step).
"""

from __future__ import annotations

from typing import Any

from server.emq import flows, jobs, keyspace, pump
from server.exercises.family import (
    Family,
    claim,
    expect_counted,
    expect_parent,
)
from server.exercises.outcome import PARENT_QUEUE, Picture
from server.exercises.scene import (
    Check,
    CheckFailed,
    Scene,
    expect_counter,
    expect_field,
    expect_reply,
    expect_unchanged,
)
from server.exercises.watchdog import Erred, Replied

PARENT = "JOBorder1"
CHILDREN = ("JOBmail1", "JOBmail2", "JOBmail3")


def result_of(child: str) -> str:
    return f"sent {child}"


def error_of(child: str) -> str:
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
    args = [entry.child, entry.value, parent, keyspace.base(queue), entry.kind, entry.policy]
    return keys, args


async def land(scene: Scene, **per_child: dict[str, Any]) -> Family:
    family = Family(parent_queue=scene.queue("orders", shown=PARENT_QUEUE), child_queue=scene.queue("mail"),
                    parent=PARENT, children=CHILDREN)
    scene.judge(family.keys())
    await flows.add(scene.admin, family.parent_queue, family.spec(**per_child))
    return family


async def finish(scene: Scene, family: Family, child: str, *, fails: bool = False) -> str:
    """Claim ``child`` and complete it (or fail it at the cap) with the course's
    scripts; returns the outbox entry that left, as the Pump reads it."""
    token = await claim(scene, family.child_queue, child)
    if fails:
        await jobs.fail(scene.admin, family.child_queue, child, token, error_of(child), max_attempts=1)
    else:
        await jobs.complete(scene.admin, family.child_queue, child, token, result_of(child))
    page = await pump.read_page(scene.admin, family.child_queue, 1)
    if not page:
        raise CheckFailed(f"expected an entry for {child} in the outbox, the outbox is empty")
    return page[0]


async def deliver(scene: Scene, family: Family, raw: str, step: str) -> tuple[Replied | Erred, Picture]:
    """Hand one raw entry of the mail queue's outbox to the learner's script,
    after the Pump's own check of it (``pump.trusted``)."""
    keys, args = deliver_call(pump.trusted(raw, family.child_queue, None))
    return await scene.learner(keys, args, step)


async def counted(scene: Scene, family: Family, child: str, left: int) -> None:
    raw = await finish(scene, family, child)
    step = f"the delivery of {child}'s completion"
    outcome, after = await deliver(scene, family, raw, step)
    expect_counted(outcome, after, family, child, result_of(child), left, step)
    await pump.trim(scene.admin, family.child_queue, [raw])  # the Pump's trim after a page that delivered


async def three_children(scene: Scene) -> str:
    family = await land(scene)
    for done, child in enumerate(CHILDREN, 1):
        await counted(scene, family, child, len(CHILDREN) - done)
    return ("each delivery counted its child once: :dependencies went 3 → 2 → 1 → 0 "
            "and :processed holds the three results")


async def last_finished(scene: Scene) -> tuple[Family, str]:
    """The first two children finished and delivered by the course's Pump, the last one
    finished: the flow, and the last child's outbox entry."""
    family = await land(scene)
    for child in CHILDREN[:2]:
        await finish(scene, family, child)
        await pump.deliver_flow_completions(scene.admin, family.child_queue, 10)
    return family, await finish(scene, family, CHILDREN[2])


async def last_child(scene: Scene) -> str:
    family, raw = await last_finished(scene)
    step = f"the delivery of {CHILDREN[2]}'s completion, the last child"
    outcome, after = await deliver(scene, family, raw, step)
    expect_reply(outcome, 1, step)
    expect_counter(after, family.deps, 0, step)
    expect_parent(after, family, "released", step)
    return "the parent was released after the last delivery: it is in pending with state pending"


async def crash_before_trim(scene: Scene) -> str:
    family = await land(scene)
    child = CHILDREN[0]
    raw = await finish(scene, family, child)
    first = f"the first delivery of {child}"
    outcome, after = await deliver(scene, family, raw, first)
    expect_reply(outcome, 1, first)
    expect_counter(after, family.deps, 2, first)
    # the Pump crashes here, before its trim: the next tick reads the same entry
    again = f"the second delivery of {child} (a crash before trim)"
    outcome, after = await deliver(scene, family, raw, again)
    expect_counter(after, family.deps, 2, again)
    expect_reply(outcome, 2, again)
    expect_unchanged(scene.before, after, again)
    return (f"the second delivery of {child} after a crash before trim answered 2 and decremented nothing: "
            ":dependencies stayed 2")


async def released_once(scene: Scene) -> str:
    family, raw = await last_finished(scene)
    last = CHILDREN[2]
    step = f"the delivery of {last}'s completion"
    outcome, after = await deliver(scene, family, raw, step)
    expect_reply(outcome, 1, step)
    expect_parent(after, family, "released", step)
    # a crash before trim; meanwhile a worker claims the released parent
    await claim(scene, family.parent_queue, PARENT)
    again = f"the second delivery of {last}, after a worker claimed the parent"
    outcome, after = await deliver(scene, family, raw, again)
    expect_parent(after, family, "claimed", again)
    expect_counter(after, family.deps, 0, again)
    expect_reply(outcome, 2, again)
    return ("the parent was released once: the repeated last entry answered 2 and left it "
            "with the worker that claimed it")


async def ignored_failure(scene: Scene) -> str:
    child = CHILDREN[0]
    family = await land(scene, **{child: {"ignore_dependency_on_failure": True}})
    raw = await finish(scene, family, child, fails=True)
    step = f"the delivery of {child}'s failure (policy: ignore the dependency)"
    outcome, after = await deliver(scene, family, raw, step)
    expect_reply(outcome, 1, step)
    expect_counter(after, family.deps, 2, step)
    expect_field(after, family.ignored, ":ignored", child, error_of(child), step)
    expect_field(after, family.processed, ":processed", child, None, step)
    expect_parent(after, family, "held", step)
    again = f"the second delivery of {child}'s failure (a crash before trim)"
    outcome, after = await deliver(scene, family, raw, again)
    expect_counter(after, family.deps, 2, again)
    expect_reply(outcome, 2, again)
    return (f"the ignored failure of {child} went into :ignored and counted once: "
            ":dependencies went 3 → 2 and stayed 2 when it came again")


async def failing_parent(scene: Scene) -> str:
    family = await land(scene)
    child = CHILDREN[0]
    raw = await finish(scene, family, child, fails=True)
    step = f"the delivery of {child}'s failure (policy: fail the parent)"
    outcome, after = await deliver(scene, family, raw, step)
    expect_reply(outcome, 1, step)
    expect_parent(after, family, "failed", step)
    expect_counter(after, family.deps, 3, step)
    again = f"the second delivery of {child}'s failure"
    outcome, after = await deliver(scene, family, raw, again)
    expect_reply(outcome, 2, again)
    expect_unchanged(scene.before, after, again)
    return (f"the failure of {child} failed the parent (state failed, in dead) without counting it, "
            "and its second delivery changed nothing")


async def missing_parent(scene: Scene) -> str:
    family = await land(scene)
    ghost = "JOBorder9"
    entry = pump.OutboxEntry(kind="completed", child=CHILDREN[0], child_queue=family.child_queue,
                             value=result_of(CHILDREN[0]), parent=ghost,
                             parent_queue=family.parent_queue, policy="fp")
    scene.judge([keyspace.job_key(family.parent_queue, ghost), keyspace.dependencies_key(family.parent_queue, ghost),
                 keyspace.processed_key(family.parent_queue, ghost)])
    step = f"the delivery of an entry for {ghost} (a parent with no row)"
    outcome, after = await deliver(scene, family, pump.encode_entry(entry), step)
    expect_reply(outcome, 0, step)
    expect_unchanged(scene.before, after, step)
    return f"the entry for {ghost}, which has no row, answered 0 and wrote nothing, so the Pump stops there"


CHECKS = (
    Check("three children", three_children),
    Check("the last child", last_child),
    Check("a crash before trim", crash_before_trim),
    Check("released once", released_once),
    Check("an ignored failure", ignored_failure),
    Check("a failure that fails the parent", failing_parent),
    Check("a missing parent", missing_parent),
)
