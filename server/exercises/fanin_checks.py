"""The checks of a learner's ``complete``: the fan-in of a same-queue flow.

``FANIN_CHECKS`` land JOBreport ← JOBpart1..3, claimed with the course's ``claim``, each call what
``jobs.complete`` would send ``complete.lua``. The last two put the parent where ``release_parent``
refuses to release it (failed, as ``fail_parent`` leaves one; released early, as the second
exercise's ``complete`` does, then claimed): a fan-in that releases at zero without looking at the
parent's state fails them.
"""

from __future__ import annotations

from server.emq import jobs, keyspace
from server.exercises.checks import Check, CheckFailed, Family, Scene, claim, expect_counted, judge, land, parent_said

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
    said = parent_said(scene, family, where)
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
