"""The failure-policy widget on a real Valkey, driven as clicks drive it: the
policy token is read from the child rows, each arm leaves its own keys, and
every sentence is checked against the keys."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest

from server.emq import keyspace, pump, results
from server.widgets import questions
from server.widgets.failure_policy import CHILDREN, ERROR, LINKED, PARENT, REMOTE, FailurePolicy
from server.widgets.reader import read
from tests import widgets
from tests.integration.keystates import dumps, reachable, replay, states
from tests.support import LiveSite, sandbox_of

SANDBOX = widgets.SANDBOX
W = "failure-policy"


def home(sandbox: str = SANDBOX) -> str:
    return f"{sandbox}.failure-policy"


def mail(sandbox: str = SANDBOX) -> str:
    return f"{sandbox}.failure-policy.mail"


async def row(conn: Any, job: str, queue: str | None = None) -> dict[str, str]:
    return dict(await conn.hgetall(keyspace.job_key(queue or home(), job)))


async def members(conn: Any, name: str, queue: str | None = None) -> list[str]:
    return list(await conn.zrange(keyspace.queue_key(queue or home(), name), 0, -1))


FATE = {"awaiting_children": "the parent stays held (awaiting_children), in no state set",
        "pending": "the parent is released: state pending, in pending",
        "failed": "the parent is failed (state failed, in dead): nothing will release it"}


async def readout_is_true(conn: Any, sandbox: str = SANDBOX) -> str:
    """The snapshot's readout, each of its facts checked against the raw keys."""
    readout = (await widgets.snapshot_of(conn, W, sandbox)).readout
    q, m = home(sandbox), mail(sandbox)
    rows = {c: await row(conn, c, q) for c in CHILDREN}
    for token in {r["parent_policy"] for r in rows.values() if r}:
        assert re.search(rf"\b{token} \(", readout), (token, readout)
    processed = await conn.hkeys(keyspace.processed_key(q, PARENT))
    counts = {"died at the cap": sum(r.get("state") == "dead" for r in rows.values()),
              "completed": sum(not r and c in processed for c, r in rows.items()),
              "waiting in pending": len(set(await members(conn, "pending", q)) & set(CHILDREN)),
              "scheduled for a retry": sum(r.get("state") == "scheduled" for r in rows.values())}
    for words, n in counts.items():
        assert (f"{n} {words}" in readout) == bool(n), (words, n, readout)
    assert f":dependencies = {await results.dependencies(conn, q, PARENT)}" in readout
    assert f":ignored holds {await conn.hlen(keyspace.ignored_key(q, PARENT))}" in readout
    for job, after in ((PARENT, "Cross-queue"), (LINKED, "")):
        state = (await row(conn, job, q)).get("state", "")
        said = readout.split("Cross-queue")[0] if after else readout.split(f"{LINKED}: ")[1]
        assert FATE[state] in said, (job, state, readout)
        assert (job in await members(conn, "dead", q)) == (state == "failed")
    remote = await row(conn, REMOTE, m)
    assert f"{REMOTE} in failure-policy.mail: {remote['state']}, in " in readout
    waiting = await conn.llen(keyspace.outbox_key(m))
    assert (f"mail's outbox holds {waiting} entr" if waiting else "mail's outbox is empty") in readout
    return readout


@pytest.fixture
async def landed(conn: Any) -> Any:
    await widgets.show(conn, W)
    return conn


async def test_the_flows_land_with_fail_the_parent_by_default(landed: Any) -> None:
    conn = landed
    assert [(await row(conn, c))["parent_policy"] for c in CHILDREN] == ["fp"] * 3
    snap = await widgets.snapshot_of(conn, W)
    assert snap.picture["policy"] == "fp" and snap.picture["tokens"] == ["fp"]
    assert "The child rows say parent_policy fp (fail the parent)" in await readout_is_true(conn)


async def test_under_fp_a_death_at_the_cap_fails_the_parent_and_a_sibling_never_releases_it(landed: Any) -> None:
    conn = landed
    died = await widgets.act(conn, W, "fail-child")
    assert died.outcome["reached"] == ["fp-failed"] and died.outcome["detail"]["answer"] == "dead"
    assert died.outcome["text"] == ("JOBchild1 died at its cap: fail answered dead. Its row's parent_policy fp: "
                                    "the parent was failed and moved to dead.")
    parent = await row(conn, PARENT)
    assert parent["state"] == "failed" and parent["failed_child"] == "JOBchild1" and parent["error"] == ERROR
    assert set(await members(conn, "dead")) == {"JOBchild1", PARENT}
    assert await results.dependencies(conn, home(), PARENT) == 3
    for expected in (2, 1):
        done = await widgets.act(conn, W, "complete-child")
        assert done.outcome["reached"] == ["fp-stays"] and "the failed parent stays in dead" in done.outcome["text"]
        assert await results.dependencies(conn, home(), PARENT) == expected
    assert (await row(conn, PARENT))["state"] == "failed" and PARENT not in await members(conn, "pending")
    assert "1 died at the cap, 2 completed" in await readout_is_true(conn)


async def test_under_id_the_error_is_ignored_and_the_last_child_releases_the_parent(landed: Any) -> None:
    conn = landed
    chose = await widgets.act(conn, W, "policy", policy="id")
    assert "every child on id (ignore the dependency)" in chose.outcome["text"]
    assert [(await row(conn, c))["parent_policy"] for c in CHILDREN] == ["id"] * 3
    first = await widgets.act(conn, W, "fail-child")
    assert first.outcome["reached"] == ["id-ignored"] and "id: the error went to the parent's :ignored" in \
        first.outcome["text"]
    assert await results.ignored_failures(conn, home(), PARENT) == {"JOBchild1": ERROR}
    await widgets.act(conn, W, "complete-child")
    last = await widgets.act(conn, W, "fail-child")
    assert last.outcome["reached"] == ["id-ignored", "id-released"]
    assert (await row(conn, PARENT))["state"] == "pending" and await members(conn, "pending") == [PARENT]
    await readout_is_true(conn)
    # the released parent is never claimed as if it were a child
    nothing = await widgets.act(conn, W, "fail-child")
    assert nothing.outcome["kind"] == "info" and await members(conn, "pending") == [PARENT]


async def test_the_policy_choice_is_kept_across_reset(landed: Any) -> None:
    conn = landed
    await widgets.act(conn, W, "policy", policy="id")
    await widgets.act(conn, W, "fail-child")
    await widgets.act(conn, W, "reset")
    assert [(await row(conn, c))["parent_policy"] for c in CHILDREN] == ["id"] * 3
    assert (await row(conn, REMOTE, mail()))["parent_policy"] == "id"
    assert (await widgets.snapshot_of(conn, W)).picture["policy"] == "id"
    assert await conn.hget(f"lab:{{{home()}}}:state", "policy") == "id"


async def test_a_policy_outside_the_two_is_refused_with_400_and_nothing_is_written(site: LiveSite) -> None:
    client = site.visitor("/flows/cross-queue")
    sandbox = sandbox_of(client)
    origin = {"Origin": site.url}
    assert client.get(f"/api/widgets/{W}/state").status_code == 200
    r = site.redis()
    before = {k: r.dump(k) for k in r.scan_iter(match=f"*{sandbox}*")}
    for body in ({"policy": "both"}, {}, {"policy": 1}, {"policy": "id", "extra": True}):
        answer = client.post(f"/api/widgets/{W}/policy", json=body, headers=origin)
        assert answer.status_code == 400, answer.text
        assert "does not fit this action" in answer.json()["error"]
    assert {k: r.dump(k) for k in r.scan_iter(match=f"*{sandbox}*")} == before


async def test_a_failure_with_attempts_left_schedules_the_child_and_leaves_the_parent_alone(landed: Any) -> None:
    conn = landed
    keys = [keyspace.job_key(home(), PARENT), keyspace.dependencies_key(home(), PARENT)]
    before = [await conn.dump(k) for k in keys]
    retried = await widgets.act(conn, W, "fail-retry")
    assert retried.outcome["reached"] == ["retry"] and "fail answered scheduled" in retried.outcome["text"]
    assert await members(conn, "schedule") == ["JOBchild1"] and (await row(conn, "JOBchild1"))["state"] == "scheduled"
    assert [await conn.dump(k) for k in keys] == before
    assert not await conn.exists(keyspace.ignored_key(home(), PARENT)) and await members(conn, "dead") == []
    assert "2 waiting in pending, 1 scheduled for a retry" in await readout_is_true(conn)


async def test_the_mixed_flow_resolves_each_childs_token_as_the_design_says(landed: Any) -> None:
    conn = landed
    await widgets.act(conn, W, "mixed")
    assert [(await row(conn, c))["parent_policy"] for c in CHILDREN] == ["fp", "id", "skip"]
    assert "skip (unknown: it resolves to fp" in await readout_is_true(conn)
    await widgets.act(conn, W, "fail-retry")  # JOBchild1: scheduled, no arm
    both = await widgets.act(conn, W, "fail-child")  # JOBchild2 named both flags: its row says id
    assert both.outcome["detail"]["child"] == "JOBchild2" and both.outcome["reached"] == ["id-ignored", "both-flags"]
    unknown = await widgets.act(conn, W, "fail-child")  # JOBchild3's skip resolves to fp
    assert unknown.outcome["reached"] == ["fp-failed", "unknown-token"]
    assert "Its row's parent_policy skip resolves to fp: the parent was failed" in unknown.outcome["text"]
    assert (await row(conn, PARENT))["failed_child"] == "JOBchild3"
    await readout_is_true(conn)
    await widgets.act(conn, W, "reset")  # the variant is the learner's: Reset lands the mixed flow again
    assert (await row(conn, "JOBchild3"))["parent_policy"] == "skip"


@pytest.mark.parametrize(("policy", "state"), [("fp", "failed"), ("id", "pending")])
async def test_a_cross_queue_death_waits_in_the_outbox_until_the_pump_applies_it(landed: Any, policy: str,
                                                                                  state: str) -> None:
    conn = landed
    await widgets.act(conn, W, "policy", policy=policy)
    early = await widgets.act(conn, W, "pump")
    assert early.outcome["text"] == "mail's flow:outbox is empty: fail the cross-queue child first."
    died = await widgets.act(conn, W, "fail-remote")
    assert died.outcome["reached"] == ["remote-entry"] and f"(policy {policy})" in died.outcome["text"]
    assert (await row(conn, LINKED))["state"] == "awaiting_children"
    assert [pump.decode_entry(e).kind for e in await conn.lrange(keyspace.outbox_key(mail()), 0, -1)] == ["failed"]
    await readout_is_true(conn)
    pumped = await widgets.act(conn, W, "pump")
    assert pumped.outcome["reached"] == ["remote-applied"] and (await row(conn, LINKED))["state"] == state
    assert await conn.llen(keyspace.outbox_key(mail())) == 0
    after = await widgets.act(conn, W, "pump")  # a finished outbox says so, never "fail it first"
    assert after.outcome["text"] == "mail's flow:outbox is empty: nothing waits."
    await readout_is_true(conn)


async def test_an_entry_naming_another_sandbox_never_reaches_it(conn: Any) -> None:
    victim, learner = "s0c0c0c0c0c", "s0d0d0d0d0d"
    for sandbox in (victim, learner):
        await widgets.show(conn, W, sandbox)
    before = await dumps(conn, victim)
    crafted = ('{"kind":"failed","child":"JOBremote","child_queue":"' + mail(learner) + '","value":"pwned",'
               '"parent":"JOBlinked","parent_queue":"\\u0073' + victim[1:] + '.failure-policy","policy":"fp"}')
    await conn.rpush(keyspace.outbox_key(mail(learner)), crafted)
    pumped = await widgets.act(conn, W, "pump", learner)
    assert pumped.outcome["kind"] == "refused" and "names a queue outside your sandbox" in pumped.outcome["text"]
    assert await dumps(conn, victim) == before
    assert (await row(conn, LINKED, home(victim)))["state"] == "awaiting_children"
    assert "refused: failed JOBremote → JOBlinked" in (await widgets.snapshot_of(conn, W, learner)).readout


async def test_each_tour_step_replayed_by_a_deep_link_equals_clicking_its_steps(landed: Any) -> None:
    conn = landed
    tour = FailurePolicy.tour
    await widgets.act(conn, W, "policy", policy="id")  # the tour names its policies: the learner's does not matter
    for n in range(len(tour) + 1):
        acted = await widgets.act(conn, W, "goto", step=n)
        assert acted.outcome["text"].startswith(f"Step {n} of {len(tour)}")
        clicks = [(slug, body) for step in tour[:n] for slug, body in step.replay]
        clicked = await replay(conn, W, "s2222222222", [("policy", {"policy": "id"}), *clicks])
        assert await states(conn, SANDBOX) == clicked
        assert await readout_is_true(conn) == await readout_is_true(conn, "s2222222222")


async def test_the_tour_reaches_each_of_its_milestones_with_the_step_that_names_it(landed: Any) -> None:
    conn = landed
    for step in FailurePolicy.tour:
        reached: set[str] = set()
        for slug, body in step.replay:
            reached |= set((await widgets.act(conn, W, slug, **body)).outcome["reached"])
        assert step.id in reached, (step.id, reached)


@pytest.mark.parametrize("clicks", [
    [("fail-child", {}), ("complete-child", {}), ("fail-retry", {})],
    [("fail-remote", {}), ("pump", {}), ("complete-child", {})],
])
async def test_concurrent_clicks_leave_a_state_that_clicking_one_at_a_time_reaches(landed: Any, clicks: Any) -> None:
    conn = landed
    await asyncio.gather(*(widgets.act(conn, W, slug, **body) for slug, body in clicks))
    assert await states(conn, SANDBOX) in await reachable(conn, W, clicks, start=3000)
    await readout_is_true(conn)


async def test_the_readings_measure_what_the_dives_questions_ask(landed: Any) -> None:
    conn = landed
    widget = widgets.WIDGETS[W]
    fate = questions.bind(widget, {
        "id": "policy-fate", "action": "fail-child", "legend": "Predict: what happens to the parent?",
        "reading": "parent-fate", "when": "parent-held-child-pending", "says": "the parent row's state: {value}",
        "answer": "choice", "choices": [["held", "Stays held"], ["released", "Released"], ["failed", "Failed"]]})
    before = await read(conn, widget, SANDBOX)
    assert questions.offered(widget, [fate], before) == [fate]
    assert widget.measure("parent-failed-child-pending", before, before) is False
    await widgets.act(conn, W, "fail-child")
    now = await read(conn, widget, SANDBOX)
    assert questions.judge(widget, fate, "failed", now, before).right
    assert widget.measure("parent-failed-child-pending", now, now) is True
    assert widget.measure("parent-claimable", now, now) == "no"
    assert widget.measure("dependencies", now, now) == 3
    await widgets.act(conn, W, "policy", policy="id")
    for _ in range(3):
        await widgets.act(conn, W, "fail-child")
    now = await read(conn, widget, SANDBOX)
    assert widget.measure("parent-claimable", now, now) == "yes" and widget.measure("parent-fate", now, now) == \
        "released"
    assert widget.measure("child-pending", now, now) is False


async def test_a_parent_row_a_console_removed_is_said_and_nothing_is_claimed_wrongly(landed: Any) -> None:
    conn = landed
    await conn.delete(keyspace.job_key(home(), PARENT))  # what the learner's console may do
    assert "no parent row: press Reset to land the flow again" in await readout_is_true_without_parent(conn)
    died = await widgets.act(conn, W, "fail-child")
    assert died.outcome["text"].endswith("the parent was already gone, so it did not change.")
    assert not await conn.exists(keyspace.job_key(home(), PARENT))


async def readout_is_true_without_parent(conn: Any) -> str:
    readout = (await widgets.snapshot_of(conn, W)).readout
    assert f":dependencies = {await results.dependencies(conn, home(), PARENT)}" in readout
    return readout
