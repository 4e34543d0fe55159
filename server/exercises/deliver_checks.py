"""The checks of a learner's ``flow_deliver``, the Pump's half on the parent's slot.

``DELIVER_CHECKS`` land the cross-queue flow JOBorder1 (``<run>.<n>.orders``) ← JOBmail1..3
(``<run>.<n>.mail``), children finished with the course's ``complete`` or ``fail`` (each leaves an
outbox entry), the outbox read as the Pump does, each entry handed over with the KEYS/ARGV
``pump.deliver_one`` sends (``deliver_call`` mirrors it; the course's script passing every check keeps
the two in step).
"""

from __future__ import annotations

from typing import Any

from server.emq import jobs, keyspace, pump
from server.exercises.checks import Check, CheckFailed, Family, Scene, claim, expect_counted, judge, land
from server.exercises.outcome import PARENT_QUEUE

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
