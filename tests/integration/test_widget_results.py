"""The results reader on a real Valkey, driven as clicks drive it (tests/widgets.py):
the fan-in's writes, the three pure reads (proved by DUMPs taken here), every
reachable readout checked against the keys, deep links and concurrent presses."""

from __future__ import annotations

import asyncio
import itertools
import json
import re
from typing import Any

import msgspec

from server.emq import jobs, keyspace, results
from server.sandboxes import keys
from server.widgets import WIDGETS, questions, reader, runner
from server.widgets.results import CHILDREN, ERROR, PARENT, VALUES
from server.widgets.snapshot import Catalog
from server.widgets.turn import Actor
from tests.support import LiveSite, dumped, sandbox_of
from tests.widgets import SANDBOX, act, show, snapshot_of

OTHER = "s9876543210"
Q = f"{SANDBOX}.results"


def queue(sandbox: str = SANDBOX) -> str:
    return f"{sandbox}.results"


async def dumps(conn: Any, sandbox: str = SANDBOX) -> dict[str, bytes]:
    names = sorted(await conn.keys(f"emq:{{{sandbox}.results}}:*"))
    return {n: await conn.dump(n) for n in names}


async def readout_is_true(conn: Any, sandbox: str = SANDBOX) -> str:
    """The readout, after checking its numbers and the parent's fate against keys read here."""
    said = (await snapshot_of(conn, "results", sandbox)).readout
    values = await results.children_values(conn, queue(sandbox), PARENT)
    ignored = await results.ignored_failures(conn, queue(sandbox), PARENT)
    counter = await conn.get(keyspace.dependencies_key(queue(sandbox), PARENT))
    state = await conn.hget(keyspace.job_key(queue(sandbox), PARENT), "state")
    assert f"{len(values)} of 3 children complete" in said
    assert (f", {len(ignored)} ignored" in said) == bool(ignored)
    assert f":dependencies = {counter if counter is not None else '—'}" in said
    fate = {"awaiting_children": "the parent stays held (awaiting_children), in no state set",
            "pending": "the parent is released: state pending, in pending"}
    assert said.endswith(fate[state]) if state in fate else "row is gone" in said
    return str(said)


async def test_the_reader_lands_a_parent_held_on_three_children_under_the_ignore_policy(conn) -> None:
    snap = await show(conn, "results")
    assert snap.readout == ("0 of 3 children complete → :dependencies = 3; "
                            "the parent stays held (awaiting_children), in no state set")
    for child in CHILDREN:
        assert await conn.hget(keyspace.job_key(Q, child), "parent_policy") == "id"
    assert snap.picture["read"] is None


async def test_complete_child_records_its_value_in_processed_and_counts_the_parent_down(conn) -> None:
    await show(conn, "results")
    done = await act(conn, "results", "complete-child")
    assert done.outcome["text"] == ("Completed JOBleg1 with 'subtotal 40.00': complete answered 1 and the fan-in "
                                    "recorded it in :processed.")
    assert done.outcome["reached"] == ["completed"]
    assert await results.children_values(conn, Q, PARENT) == {"JOBleg1": VALUES["JOBleg1"]}
    assert not await conn.exists(keyspace.job_key(Q, "JOBleg1"))
    assert await readout_is_true(conn) == ("1 of 3 children complete → :dependencies = 2; "
                                           "the parent stays held (awaiting_children), in no state set")


async def test_fail_child_at_the_cap_puts_its_error_in_ignored_and_counts_like_a_completion(conn) -> None:
    await show(conn, "results")
    failed = await act(conn, "results", "fail-child")
    assert failed.outcome["text"].startswith("Failed JOBleg1 at the cap: fail answered dead")
    assert failed.outcome["reached"] == ["ignored"]
    assert await results.ignored_failures(conn, Q, PARENT) == {"JOBleg1": ERROR}
    assert await conn.zrange(keyspace.queue_key(Q, "dead"), 0, -1) == ["JOBleg1"]
    assert await results.dependencies(conn, Q, PARENT) == 2
    await readout_is_true(conn)


async def test_read_the_results_returns_the_three_reads_and_writes_nothing(conn) -> None:
    await show(conn, "results")
    await act(conn, "results", "complete-child")
    await act(conn, "results", "fail-child")
    before = await dumps(conn)
    read = await act(conn, "results", "read")
    assert await dumps(conn) == before
    assert read.outcome["text"] == ("The reads answered children_values → {JOBleg1: subtotal 40.00}, dependencies → "
                                    "1, ignored_failures → {JOBleg2: carrier API timed out}; no key changed (DUMPs "
                                    "equal).")
    assert read.outcome["reached"] == ["read"]
    kept = json.loads(await conn.hget(keys.state_key(Q), "read"))
    assert kept["values"] == await results.children_values(conn, Q, PARENT)
    assert kept["ignored"] == await results.ignored_failures(conn, Q, PARENT)
    assert kept["dependencies"] == await results.dependencies(conn, Q, PARENT) == 1
    assert kept["keys"] == len(before) and kept["unchanged"] is True
    assert (await snapshot_of(conn, "results")).picture["read"]["current"] is True
    await act(conn, "results", "complete-child")  # Valkey moves on: the page says the read is behind
    assert (await snapshot_of(conn, "results")).picture["read"]["current"] is False


async def test_the_last_child_releases_the_parent_once_and_the_reads_account_for_every_child(conn) -> None:
    await show(conn, "results")
    await act(conn, "results", "complete-child")
    await act(conn, "results", "fail-child")
    last = await act(conn, "results", "complete-child")
    assert last.outcome["reached"] == ["completed", "released"]
    assert await conn.zrange(keyspace.queue_key(Q, "pending"), 0, -1) == [PARENT]
    read = await act(conn, "results", "read")
    assert read.outcome["reached"] == ["read", "accounted"]
    before = await dumps(conn)
    more = await act(conn, "results", "complete-child")
    assert more.outcome["kind"] == "info" and "parent released" in more.outcome["text"]
    assert await dumps(conn) == before  # the released parent is never claimed by the widget
    assert await readout_is_true(conn) == ("2 of 3 children complete, 1 ignored → :dependencies = 0; "
                                           "the parent is released: state pending, in pending")


async def test_every_order_of_completions_and_deaths_reads_true(conn) -> None:
    for order in itertools.product(("complete-child", "fail-child"), repeat=3):
        await act(conn, "results", "reset")
        for slug in order:
            await act(conn, "results", slug)
            await readout_is_true(conn)
        read = await act(conn, "results", "read")
        assert read.outcome["detail"]["dependencies"] == 0 and "accounted" in read.outcome["reached"]


async def test_a_child_left_claimed_is_finished_by_the_next_press_with_its_token(conn) -> None:
    await show(conn, "results")
    claimed = await jobs.claim(conn, Q)
    assert claimed == ("JOBleg1", 1)
    done = await act(conn, "results", "complete-child")
    assert done.outcome["detail"]["child"] == "JOBleg1"
    assert await conn.zcard(keyspace.queue_key(Q, "active")) == 0
    assert await results.dependencies(conn, Q, PARENT) == 2


async def test_a_key_changed_from_outside_is_told_as_valkey_holds_it(conn) -> None:
    await show(conn, "results")
    await act(conn, "results", "complete-child")
    await conn.delete(keyspace.job_key(Q, PARENT))  # a console line removed the parent's row
    said = await readout_is_true(conn)
    assert said == ("The parent's row is gone (1 of 3 children complete, :dependencies = 2): nothing will run it. "
                    "Press Reset to land the flow again.")
    await conn.delete(*await conn.keys(f"emq:{{{Q}}}:*"))
    assert (await snapshot_of(conn, "results")).readout == "No flow in this queue: press Reset to land it again."
    nothing = await act(conn, "results", "complete-child")
    assert nothing.outcome["kind"] == "info"
    await act(conn, "results", "reset")
    assert await results.dependencies(conn, Q, PARENT) == 3


async def seen(conn: Any, sandbox: str) -> Any:
    snap = await snapshot_of(conn, "results", sandbox)
    queues = [{k: v for k, v in found.items() if k != "slot"} for found in snap.queues]
    # a death's score in dead is its moment: the set's members are compared, not their scores
    flat = json.dumps(msgspec.to_builtins([queues, snap.readout, snap.picture])).replace(sandbox, "S")
    return json.loads(re.sub(r'\["(JOB\w+)", \d{10,}\]', r'["\1", "t"]', flat))


async def test_goto_step_n_leaves_what_clicking_steps_1_to_n_leaves(conn) -> None:
    await show(conn, "results", OTHER)
    for n, step in enumerate(WIDGETS["results"].tour, 1):
        for slug, body in step.replay:
            await act(conn, "results", slug, OTHER, **body)
        await act(conn, "results", "goto", step=n)
        assert await seen(conn, SANDBOX) == await seen(conn, OTHER), f"step {n}"


async def test_concurrent_presses_count_each_child_once_and_release_the_parent_once(conn) -> None:
    await show(conn, "results")
    presses = await asyncio.gather(*(act(conn, "results", s) for s in
                                     ("complete-child", "fail-child", "complete-child", "read", "complete-child")))
    # four signals for three children: whichever came last found the parent released
    assert [p.outcome["kind"] for p in presses].count("info") == 1
    values = await results.children_values(conn, Q, PARENT)
    ignored = await results.ignored_failures(conn, Q, PARENT)
    assert sorted([*values, *ignored]) == list(CHILDREN) and len(ignored) <= 1
    assert await conn.zrange(keyspace.queue_key(Q, "pending"), 0, -1) == [PARENT]
    await readout_is_true(conn)


QUESTIONS = (
    {"id": "deps-after-death", "action": "fail-child", "reading": "dependencies", "when": "children-outstanding",
     "legend": "Predict: a child dies at its cap under ignore the dependency. What will :dependencies be?",
     "says": ":dependencies = {value}",
     "feedback": [{"answer": "before", "text": "A death under this policy counts like a completion."}]},
    {"id": "read-dependencies", "action": "read", "reading": "read-dependencies",
     "legend": "Predict: what will dependencies() return?", "says": "a counter of {value}"},
)


async def test_the_dives_questions_are_judged_by_what_valkey_holds(conn) -> None:
    widget = WIDGETS["results"]
    asked = tuple(questions.bind(widget, spec) for spec in QUESTIONS)
    lab = runner.Lab(conn, Catalog({"results": widget}, {"results": asked}))
    await show(conn, "results")
    offered = (await reader.snapshot(conn, lab.catalog, widget, SANDBOX))[1].questions
    assert [q.id for q in offered] == ["deps-after-death", "read-dependencies"]  # one per action

    async def answer(slug: str, question: str, given: Any) -> Any:
        body = msgspec.convert({"predict": {"question": question, "answer": given}}, widget.actions[slug].body)
        return (await runner.act(lab, widget, Actor(SANDBOX, SANDBOX), slug, body)).verdict

    wrong = await answer("fail-child", "deps-after-death", 3)
    assert wrong.text == ("Not quite: you said 3; Valkey holds :dependencies = 2. "
                          "A death under this policy counts like a completion.")
    assert (await answer("fail-child", "deps-after-death", 1)).right
    moment = (await reader.snapshot(conn, lab.catalog, widget, SANDBOX))[0]
    assert widget.measure("children-outstanding", moment, moment) is True  # one child left
    assert widget.measure("parent-fate", moment, moment) == "held"
    await act(conn, "results", "complete-child")
    offered = (await reader.snapshot(conn, lab.catalog, widget, SANDBOX))[1].questions
    assert [q.id for q in offered] == ["read-dependencies"]  # no child is outstanding now
    right = await answer("read", "read-dependencies", 0)
    assert right.right and right.text == "Right: Valkey holds a counter of 0."


def test_an_action_body_with_an_unknown_field_answers_400_and_nothing_runs(clean: LiveSite) -> None:
    client, store = clean.visitor("/flows/reading-the-results"), clean.redis()
    assert client.get("/api/widgets/results/state").status_code == 200
    state = f"lab:{{{sandbox_of(client)}.results}}:state"
    assert store.exists(state)
    before = store.hgetall(state), dumped(store, "emq:*")
    answered = client.post("/api/widgets/results/complete-child", json={"child": "JOBleg1"},
                           headers={"Origin": clean.url})
    assert answered.status_code == 400 and "child" in answered.json()["error"]
    assert (store.hgetall(state), dumped(store, "emq:*")) == before


async def test_the_reader_runs_on_a_cluster(cluster_conn) -> None:
    await show(cluster_conn, "results")
    await act(cluster_conn, "results", "goto", step=5)
    assert await results.ignored_failures(cluster_conn, Q, PARENT) == {"JOBleg2": ERROR}
    assert await readout_is_true(cluster_conn) == ("2 of 3 children complete, 1 ignored → :dependencies = 0; "
                                                   "the parent is released: state pending, in pending")
