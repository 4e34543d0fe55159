"""The checks of a learner's ``complete``: the fan-in of a same-queue flow.

Each check lands JOBreport ← JOBpart1..3 with the course's ``enqueue_flow``, claims with its
``claim``, and sends the learner's script what ``jobs.complete`` would send ``complete.lua``.
The last two checks put the parent where ``release_parent`` refuses to release it (failed, as
``fail_parent`` leaves one; released early, as the second exercise's ``complete`` does, then
claimed): a fan-in that releases at zero without looking at the parent's state fails them.
"""

from __future__ import annotations

from server.emq import flows, jobs
from server.exercises.family import (
    Family,
    claim,
    expect_counted,
    expect_parent,
    lapse,
)
from server.exercises.outcome import Picture
from server.exercises.scene import (
    Check,
    CheckFailed,
    Scene,
    expect_counter,
    expect_error,
    expect_field,
    expect_reply,
    expect_unchanged,
)
from server.exercises.watchdog import Erred, Replied

PARENT = "JOBreport"
CHILDREN = ("JOBpart1", "JOBpart2", "JOBpart3")


def result_of(child: str) -> str:
    return f"pages of {child}"


async def land(scene: Scene) -> Family:
    queue = scene.queue("reports")
    family = Family(parent_queue=queue, child_queue=queue, parent=PARENT, children=CHILDREN)
    scene.judge(family.keys())
    await flows.add(scene.admin, queue, family.spec())  # one atomic enqueue_flow
    return family


async def completion_call(scene: Scene, family: Family, child: str, token: int) -> tuple[list[str], list[str]]:
    """The KEYS/ARGV ``jobs.complete`` would send for ``child`` now."""
    line = await jobs.lineage(scene.admin, family.child_queue, child)
    return jobs.complete_call(family.child_queue, child, token, line, result_of(child))


async def complete(scene: Scene, family: Family, child: str, token: int, step: str) -> tuple[Replied | Erred, Picture]:
    return await scene.learner(*await completion_call(scene, family, child, token), step)


async def counted(scene: Scene, family: Family, child: str, left: int) -> None:
    """Claim ``child``, complete it with the learner's script, and judge that it counted."""
    token = await claim(scene, family.child_queue, child)
    step = f"the completion of {child}"
    outcome, after = await complete(scene, family, child, token, step)
    expect_counted(outcome, after, family, child, result_of(child), left, step)


HELD_ONLY = "only a parent still held (awaiting_children) is released"


def expect_kept(where: str, after: Picture, family: Family, step: str, why: str) -> None:
    """``expect_parent`` with the rule the script broke said after it, when it did."""
    try:
        expect_parent(after, family, where, step)
    except CheckFailed as failed:
        raise CheckFailed(f"{failed.said}: {HELD_ONLY}, and {why}") from None


async def last_of_two_counted(scene: Scene) -> tuple[Family, int]:
    """JOBpart1 and JOBpart2 counted by the course's complete, JOBpart3 claimed; its token."""
    family = await land(scene)
    for child in CHILDREN[:2]:
        token = await claim(scene, family.child_queue, child)
        await jobs.complete(scene.admin, family.child_queue, child, token, result_of(child))
    return family, await claim(scene, family.child_queue, CHILDREN[2])


async def last_counted(scene: Scene, family: Family, token: int, step: str) -> Picture:
    """The last child's completion by the learner's script: it counts (1, :dependencies 0, its result)."""
    outcome, after = await complete(scene, family, CHILDREN[2], token, step)
    expect_counted(outcome, after, family, CHILDREN[2], result_of(CHILDREN[2]), 0, step)
    return after


async def three_children(scene: Scene) -> str:
    family = await land(scene)
    for done, child in enumerate(CHILDREN, 1):
        await counted(scene, family, child, len(CHILDREN) - done)
    return "each child was counted once: :dependencies went 3 → 2 → 1 → 0 and :processed holds the three results"


async def last_child(scene: Scene) -> str:
    family, token = await last_of_two_counted(scene)
    step = f"the completion of {CHILDREN[2]}, the last child"
    outcome, after = await complete(scene, family, CHILDREN[2], token, step)
    expect_reply(outcome, 1, step)
    expect_counter(after, family.deps, 0, step)
    expect_parent(after, family, "released", step)
    return "the parent was released after the third child: it is in pending with state pending"


async def redelivered(scene: Scene) -> str:
    family = await land(scene)
    child = CHILDREN[0]
    token = await claim(scene, family.child_queue, child)
    keys, args = await completion_call(scene, family, child, token)
    step = f"the completion of {child}"
    outcome, after = await scene.learner(keys, args, step)
    expect_reply(outcome, 1, step)
    expect_counter(after, family.deps, 2, step)
    again = f"the same completion of {child} sent a second time"
    outcome, after = await scene.learner(keys, args, again)
    expect_counter(after, family.deps, 2, again)
    expect_reply(outcome, 0, again)
    expect_unchanged(scene.before, after, again)
    return (f"the completion of {child} sent a second time answered 0 and changed nothing: "
            ":dependencies stayed 2")


async def lapsed(scene: Scene) -> str:
    family = await land(scene)
    for done, child in enumerate(CHILDREN[:2], 1):
        await counted(scene, family, child, len(CHILDREN) - done)
    late = CHILDREN[2]
    token = await claim(scene, family.child_queue, late)
    await lapse(scene, family.child_queue, late)
    step = f"the late completion of {late} (its lease had lapsed and it was back in pending)"
    _, after = await complete(scene, family, late, token, step)
    expect_counter(after, family.deps, 1, step)
    expect_parent(after, family, "held", step)
    expect_field(after, family.processed, ":processed", late, None, step)
    return (f"the late completion of {late} counted nothing: :dependencies stayed 1 "
            "and the parent stayed held")


async def stale(scene: Scene) -> str:
    family = await land(scene)
    child = CHILDREN[0]
    old = await claim(scene, family.child_queue, child)
    await lapse(scene, family.child_queue, child)
    new = await claim(scene, family.child_queue, child)
    step = f"the completion of {child} with the stale token {old} (its row holds attempts {new})"
    outcome, after = await complete(scene, family, child, old, step)
    expect_error(outcome, "EMQSTALE", step)
    expect_unchanged(scene.before, after, step)
    return f"the completion with the stale token {old} answered EMQSTALE and wrote nothing"


async def missing_row(scene: Scene) -> str:
    family = await land(scene)
    ghost = "JOBpart9"
    # The call a worker holding a job that never landed would send: the
    # same-queue layout, naming the real parent.
    line = jobs.Lineage(mode="sq", parent=PARENT, parent_queue=family.parent_queue, policy="fp")
    keys, args = jobs.complete_call(family.child_queue, ghost, 1, line, result_of(ghost))
    step = f"the completion of {ghost} (a job with no row)"
    outcome, after = await scene.learner(keys, args, step)
    expect_reply(outcome, 0, step)
    expect_unchanged(scene.before, after, step)
    return f"the completion of {ghost}, which has no row, answered 0 and wrote nothing"


async def already_failed(scene: Scene) -> str:
    family, token = await last_of_two_counted(scene)
    # meanwhile an operator gave up on the flow: the parent failed, as fail_parent leaves one
    await scene.admin.hset(family.parent_row, mapping={"state": "failed", "error": "given up by an operator"})
    await scene.admin.zadd(family.parent_set("dead"), {PARENT: 1})
    step = f"the completion of {CHILDREN[2]}, the last child, after the parent had failed"
    after = await last_counted(scene, family, token, step)
    expect_kept("failed", after, family, step, "this one had failed already")
    return (f"the completion of {CHILDREN[2]} counted it (:dependencies 0) and left the failed parent "
            "failed, in dead")


async def already_released(scene: Scene) -> str:
    family, token = await last_of_two_counted(scene)
    # released too early (as the second exercise's complete does), then a worker claims it
    await scene.admin.zadd(family.parent_set("pending"), {PARENT: 0})
    await scene.admin.hset(family.parent_row, "state", "pending")
    await claim(scene, family.parent_queue, PARENT)
    step = f"the completion of {CHILDREN[2]}, the last child, after a worker had claimed the released parent"
    after = await last_counted(scene, family, token, step)
    expect_kept("claimed", after, family, step, "this one was released and claimed already")
    return (f"the completion of {CHILDREN[2]} counted it (:dependencies 0) and left the parent "
            "with the worker that claimed it")


CHECKS = (
    Check("three children", three_children),
    Check("the last child", last_child),
    Check("a redelivered completion", redelivered),
    Check("a completion after the lease lapsed", lapsed),
    Check("a stale token", stale),
    Check("a missing row", missing_row),
    Check("a parent already failed", already_failed),
    Check("a parent already released", already_released),
)
