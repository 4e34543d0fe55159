"""The bulk ledger on a real Valkey, driven as clicks drive it (tests/widgets.py):
each action's keys, the sentences checked against the keys, the tour's deep
links, concurrent presses, and the learner's own batch (bounded at the door,
its ids judged by add_bulk's gate)."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import msgspec

from server.emq import keyspace, results
from server.sandboxes import keys
from server.widgets import WIDGETS, ledger_batch, questions, reader, runner
from server.widgets.ledger_batch import FIXED_PLAN
from server.widgets.snapshot import Catalog
from server.widgets.turn import Actor
from tests.support import LiveSite, sandbox_of
from tests.widgets import SANDBOX, act, show, snapshot_of

OTHER = "s9876543210"
ORDERS, MAIL, BILLING = (f"{SANDBOX}.ledger.{q}" for q in ("orders", "mail", "billing"))
A, D, G, J = (p.parent for p in FIXED_PLAN)


def q(rel: str, sandbox: str = SANDBOX) -> str:
    return f"{sandbox}.ledger.{rel}"


async def state_of(conn: Any, job_id: str, rel: str = "orders", sandbox: str = SANDBOX) -> str | None:
    found: str | None = await conn.hget(keyspace.job_key(q(rel, sandbox), job_id), "state")
    return found


async def pending(conn: Any, rel: str, sandbox: str = SANDBOX) -> list[str]:
    return list(await conn.zrange(keyspace.queue_key(q(rel, sandbox), "pending"), 0, -1))


async def emq_keys(conn: Any, sandbox: str = SANDBOX) -> dict[str, bytes]:
    """Every learner key of the sandbox and its DUMP: equal means nothing was written."""
    names = sorted(await conn.keys(f"emq:{{{sandbox}.*"))
    return {n: await conn.dump(n) for n in names}


async def seen(conn: Any, sandbox: str) -> tuple[Any, str, Any]:
    """What every page of `sandbox` paints (its keys, readout, picture), the sandbox id written as S."""
    snap = await snapshot_of(conn, "ledger", sandbox)
    queues = [{k: v for k, v in found.items() if k != "slot"} for found in snap.queues]  # a slot is the sandbox's
    flat = json.dumps(msgspec.to_builtins([queues, snap.readout, snap.picture])).replace(sandbox, "S")
    return tuple(json.loads(flat))  # type: ignore[return-value]


async def readout_is_true(conn: Any, sandbox: str = SANDBOX) -> str:
    """The readout, after checking each of its facts against keys read here directly."""
    snap = await snapshot_of(conn, "ledger", sandbox)
    state = await conn.hgetall(keys.state_key(q("orders", sandbox)))
    result = json.loads(state.get("result") or "[]")
    if snap.readout.startswith("Before flow 1"):
        assert result == [] and all([await state_of(conn, f["parent"], sandbox=sandbox) is None
                                     for f in snap.picture["flows"]])
        return snap.readout
    count = int(re.search(r": (\d+) entr", snap.readout).group(1))  # type: ignore[union-attr]
    assert count == len(result)
    words = dict(re.findall(r"(\d+): ([a-z ]+?)(?:,|\.$)", snap.readout.partition("parents — ")[2]))
    for flow in snap.picture["flows"]:
        row = await state_of(conn, flow["parent"], sandbox=sandbox)
        said = words[str(flow["number"])]
        want = {"awaiting_children": "held", "pending": "released"}.get(row or "", row)
        assert said == want or (row is None and said in ("no row", "not added yet")), (said, row)
    return snap.readout


async def test_the_ledger_lands_empty_and_says_so(conn) -> None:
    snap = await show(conn, "ledger")
    assert snap.readout == "Before flow 1: the result list is empty and no flow's parent has a row."
    assert await emq_keys(conn) == {}
    assert [f["line"] for f in snap.picture["flows"]][3].startswith("Flow 4 (cross-queue) is not added yet")


async def test_next_flow_adds_each_flow_through_flows_add_and_each_readout_says_what_valkey_holds(conn) -> None:
    await show(conn, "ledger")
    first = await act(conn, "ledger", "next")
    assert first.outcome["text"] == "Flow 1: flows.add returned (JOB0KHTOWnGLuA, [JOB0KHTOWnGLuB, JOB0KHTOWnGLuC])."
    assert await state_of(conn, A) == "awaiting_children"
    assert await conn.get(keyspace.dependencies_key(ORDERS, A)) == "2"
    await act(conn, "ledger", "next")
    assert await pending(conn, "mail") == ["JOB0KHTOWnGLuE"]
    third = await act(conn, "ledger", "next")
    assert third.outcome["kind"] == "refused"
    assert "EMQKIND job id must be JOB-namespaced" in third.outcome["text"]
    assert not [k for k in await emq_keys(conn) if re.search("GLu[GHI]", k)]  # the refused flow wrote nothing
    fourth = await act(conn, "ledger", "next")
    assert fourth.outcome["reached"] == ["held"]
    assert await state_of(conn, J) == "awaiting_children"
    assert await pending(conn, "billing") == ["JOB0KHTOWnGLuL"]
    assert not await conn.exists(keyspace.job_key(BILLING, "TASK0KHTOWnGLuK"))
    assert await readout_is_true(conn) == ("Flow 4 of 4 added one at a time: 2 entries in the result; "
                                           "parents — 1: held, 2: held, 3: no row, 4: held.")
    again = await act(conn, "ledger", "next")
    assert again.outcome["kind"] == "info" and "All four flows" in again.outcome["text"]


async def test_previous_flow_rebuilds_the_ledger_without_the_last_flow(conn) -> None:
    await show(conn, "ledger")
    for _ in range(4):
        await act(conn, "ledger", "next")
    back = await act(conn, "ledger", "previous")
    assert back.outcome["text"].startswith("Back to flow 3")
    assert not await conn.exists(keyspace.job_key(ORDERS, J))
    assert await readout_is_true(conn) == ("Flow 3 of 4 added one at a time: 2 entries in the result; "
                                           "parents — 1: held, 2: held, 3: no row, 4: not added yet.")
    for _ in range(3):
        await act(conn, "ledger", "previous")
    assert await emq_keys(conn) == {}
    assert (await snapshot_of(conn, "ledger")).readout.startswith("Before flow 1")


async def test_run_the_batch_clears_earlier_state_and_returns_the_landed_flows_in_input_order(conn) -> None:
    await show(conn, "ledger")
    await act(conn, "ledger", "goto", step=6)  # flow 4 retried and released
    ran = await act(conn, "ledger", "run-batch")
    assert ran.outcome["text"] == ("Cleared the ledger, then one add_bulk over the 4 flows returned 2 entries in "
                                   "input order: JOB0KHTOWnGLuA, JOB0KHTOWnGLuD.")
    assert set(ran.outcome["reached"]) == {"bulk", "flow1", "flow2", "refused", "held"}
    # what the retry landed is gone: the batch started on an empty ledger
    assert not await conn.exists(keyspace.job_key(BILLING, ledger_batch.FLOW4_CHILD_FIXED))
    assert await state_of(conn, J) == "awaiting_children"
    snap = await snapshot_of(conn, "ledger")
    assert snap.picture["result"] == [[A, ["JOB0KHTOWnGLuB", "JOB0KHTOWnGLuC"]],
                                      [D, ["JOB0KHTOWnGLuE", "JOB0KHTOWnGLuF"]]]
    assert [f["entry"] is not None for f in snap.picture["flows"]] == [True, True, False, False]
    assert await readout_is_true(conn) == ("After one add_bulk over the 4 flows: 2 entries in the result; "
                                           "parents — 1: held, 2: held, 3: no row, 4: held.")


async def test_retry_flow_4_resumes_its_held_parent_and_the_completions_release_it_once(conn) -> None:
    await show(conn, "ledger")
    early = await act(conn, "ledger", "retry-4")
    assert early.outcome["kind"] == "info" and await emq_keys(conn) == {}
    await act(conn, "ledger", "run-batch")
    retried = await act(conn, "ledger", "retry-4")
    assert retried.outcome["reached"] == ["retried"]
    assert await pending(conn, "billing") == ["JOB0KHTOWnGLuK", "JOB0KHTOWnGLuL"]
    assert await conn.get(keyspace.dependencies_key(ORDERS, J)) == "2"  # a retry keeps the counter
    done = await act(conn, "ledger", "complete-4")
    assert done.outcome["detail"]["delivered"] == 2 and done.outcome["reached"] == ["released"]
    assert await state_of(conn, J) == "pending" and await pending(conn, "orders") == [
        "JOB0KHTOWnGLuB", "JOB0KHTOWnGLuC", "JOB0KHTOWnGLuF", J]
    assert set(await results.children_values(conn, ORDERS, J)) == {"JOB0KHTOWnGLuK", "JOB0KHTOWnGLuL"}
    again = await act(conn, "ledger", "complete-4")
    assert again.outcome["kind"] == "info" and await state_of(conn, J) == "pending"
    twice = await act(conn, "ledger", "retry-4")  # the parent is released: the script says it is not held
    assert twice.outcome["kind"] == "refused" and "EMQSTATE flow parent exists and is not held" in \
        twice.outcome["text"]


async def test_a_child_completed_before_the_retry_is_not_counted_twice(conn) -> None:
    await show(conn, "ledger")
    await act(conn, "ledger", "run-batch")
    first = await act(conn, "ledger", "complete-4")
    assert first.outcome["detail"]["completed"] == ["JOB0KHTOWnGLuL"] and first.outcome["reached"] == []
    assert await conn.get(keyspace.dependencies_key(ORDERS, J)) == "1"
    await act(conn, "ledger", "retry-4")
    assert await pending(conn, "billing") == ["JOB0KHTOWnGLuK"]  # L is not landed again
    last = await act(conn, "ledger", "complete-4")
    assert last.outcome["reached"] == ["released"] and await state_of(conn, J) == "pending"
    assert await conn.get(keyspace.dependencies_key(ORDERS, J)) == "0"


async def test_try_an_ill_formed_id_raises_badid_before_any_write_and_no_key_changes(conn) -> None:
    await show(conn, "ledger")
    await act(conn, "ledger", "next")
    before = await emq_keys(conn)
    tried = await act(conn, "ledger", "ill-formed")
    assert await emq_keys(conn) == before
    assert tried.outcome["kind"] == "refused" and tried.outcome["reached"] == ["gate"]
    assert tried.outcome["text"] == ("add_bulk raised BadId for 'JOB bad}' in flow 2 before any write: flow 1, "
                                     "well-formed, did not land either; no key changed.")
    assert "ill-formed job id 'JOB bad}'" in tried.outcome["detail"]["error"]


async def test_your_own_batch_lands_through_add_bulk_and_its_held_parent_is_found_and_reset(conn) -> None:
    await show(conn, "ledger")
    await act(conn, "ledger", "run-batch")
    batch = ledger_batch.sample_batch()
    batch[1]["children"][-1]["id"] = "TASKmine6"  # the script refuses flow 2 partway
    ran = await act(conn, "ledger", "own-batch", flows=batch)
    assert ran.outcome["text"] == ("Cleared the ledger, then one add_bulk over your 3 flows returned 2 entries: "
                                   "JOBmine1, JOBmine7.")
    assert not await conn.exists(keyspace.job_key(ORDERS, A))  # the fixed batch was cleared first
    assert await state_of(conn, "JOBmine4") == "awaiting_children"  # held, in no state set
    snap = await snapshot_of(conn, "ledger")
    second = snap.picture["flows"][1]
    assert second["state"] == "awaiting_children" and second["sets"] == [] and second["entry"] is None
    assert [c["where"] for c in second["children"]] == ["pending, in pending", "no row"]
    assert await readout_is_true(conn) == ("After your batch of 3 flows: 2 entries in the result; "
                                           "parents — 1: held, 2: held, 3: held.")
    await act(conn, "ledger", "reset")
    assert await emq_keys(conn) == {}
    assert not await conn.exists(keys.index_key(ORDERS))


async def test_an_ill_formed_id_in_your_batch_reaches_add_bulk_and_is_refused_in_words(conn) -> None:
    await show(conn, "ledger")
    await act(conn, "ledger", "next")
    batch = ledger_batch.sample_batch()
    batch[1]["children"][-1]["id"] = "JOBmine6 bad}"
    ran = await act(conn, "ledger", "own-batch", flows=batch)
    assert ran.outcome["kind"] == "refused" and set(ran.outcome["reached"]) == {"own", "gate"}
    assert ran.outcome["text"].startswith("Cleared the ledger; add_bulk then refused your whole batch before any "
                                          "write: ill-formed job id 'JOBmine6 bad}'")
    assert await emq_keys(conn) == {}  # the earlier flow was cleared; JOBmine1, well-formed, never landed
    snap = await snapshot_of(conn, "ledger")
    assert snap.readout == ("After your batch of 3 flows, refused whole by the gate: 0 entries in the result; "
                            "parents — 1: no row, 2: no row, 3: no row.")
    assert snap.picture["flows"][1]["children"][1]["where"] == "ill-formed: no key can be built for it"


async def test_pick_shows_one_flow_of_the_batch_on_the_ledger(conn) -> None:
    await show(conn, "ledger")
    await act(conn, "ledger", "run-batch")
    await act(conn, "ledger", "pick", flow=4)
    snap = await snapshot_of(conn, "ledger")
    assert snap.picture["picked"] == 4
    assert snap.picture["flows"][3]["line"] == (
        "Flow 4 (cross-queue) is not in the result; parent JOB0KHTOWnGLuJ: awaiting_children, :dependencies = 2, "
        "in no state set; children: JOB0KHTOWnGLuL (ledger.billing) pending, in pending; "
        "TASK0KHTOWnGLuK (ledger.billing) no row.")
    beyond = await act(conn, "ledger", "pick", flow=9)
    assert beyond.outcome["kind"] == "info" and (await snapshot_of(conn, "ledger")).picture["picked"] == 4


async def test_goto_step_n_leaves_what_clicking_steps_1_to_n_leaves(conn) -> None:
    widget = WIDGETS["ledger"]
    await show(conn, "ledger", OTHER)
    for n, step in enumerate(widget.tour, 1):
        for slug, body in step.replay:
            await act(conn, "ledger", slug, OTHER, **body)
        await act(conn, "ledger", "goto", step=n)
        assert await seen(conn, SANDBOX) == await seen(conn, OTHER), f"step {n}"
        await readout_is_true(conn)


async def test_concurrent_presses_leave_a_state_one_at_a_time_clicking_reaches(conn) -> None:
    await show(conn, "ledger")
    presses = await asyncio.gather(*(act(conn, "ledger", "next") for _ in range(5)))
    assert sorted(p.outcome["text"][:6] for p in presses) == ["All fo", "Flow 1", "Flow 2", "Flow 3", "Flow 4"]
    await act(conn, "ledger", "goto", OTHER, step=4)
    assert await seen(conn, SANDBOX) == await seen(conn, OTHER)
    # retry and complete at once: either order is a state clicking reaches
    await act(conn, "ledger", "run-batch")
    await asyncio.gather(act(conn, "ledger", "retry-4"), act(conn, "ledger", "complete-4"))
    reachable = []
    for order in (("retry-4", "complete-4"), ("complete-4", "retry-4")):
        await act(conn, "ledger", "run-batch", OTHER)
        for slug in order:
            await act(conn, "ledger", slug, OTHER)
        reachable.append((await seen(conn, OTHER))[0])
    assert (await seen(conn, SANDBOX))[0] in reachable


async def test_a_key_changed_from_outside_is_told_as_valkey_holds_it(conn) -> None:
    await show(conn, "ledger")
    await act(conn, "ledger", "run-batch")
    await conn.delete(keyspace.job_key(ORDERS, A))  # a console line removed flow 1's parent
    assert await readout_is_true(conn) == ("After one add_bulk over the 4 flows: 2 entries in the result; "
                                           "parents — 1: no row, 2: held, 3: no row, 4: held.")
    # members of active that no press may finish: an ill-formed one, one whose row is gone
    await conn.zadd(keyspace.queue_key(BILLING, "active"), {"not an id}": 1, "JOBghost": 1})
    done = await act(conn, "ledger", "complete-4")
    assert done.outcome["detail"]["completed"] == ["JOB0KHTOWnGLuL"]
    assert await conn.get(keyspace.dependencies_key(ORDERS, J)) == "1"
    await readout_is_true(conn)
    await conn.delete(keyspace.queue_key(BILLING, "pending"))
    await conn.set(keyspace.queue_key(BILLING, "pending"), "not a zset")
    snap = await snapshot_of(conn, "ledger")
    assert snap.problem is not None and "holds a string where the key grammar has a zset" in snap.problem
    await act(conn, "ledger", "reset")
    assert await emq_keys(conn) == {}


# -- the dive's questions, judged on what Valkey holds --------------------------------

QUESTIONS = (
    {"id": "ledger-flow4", "action": "next", "reading": "flow4-parent", "when": "next-is-flow-4",
     "legend": "Predict: what becomes of flow 4's parent?", "answer": "choice", "says": "{value}",
     "choices": [["absent", "no row for flow 4's parent"], ["held", "flow 4's parent held, awaiting_children"],
                 ["released", "flow 4's parent in pending"]]},
    {"id": "ledger-result", "action": "next", "reading": "result-size", "when": "flows-left",
     "legend": "Predict: how long will the result list be after this flow?", "says": "a result list of length {value}",
     "feedback": [{"answer": "before+1", "text": "This flow was refused: it adds no entry."}]},
    {"id": "ledger-ill-formed", "action": "ill-formed", "reading": "new-keys",
     "legend": "Predict: how many new keys will the batch with an ill-formed id write?",
     "says": "{value} new keys in the ledger's queues"},
)


def lab_with_questions(conn: Any) -> runner.Lab:
    widget = WIDGETS["ledger"]
    asked = tuple(questions.bind(widget, spec) for spec in QUESTIONS)
    return runner.Lab(conn, Catalog({"ledger": widget}, {"ledger": asked}))


async def answer(lab: runner.Lab, slug: str, question: str, given: Any) -> runner.Acted:
    body = msgspec.convert({"predict": {"question": question, "answer": given}}, WIDGETS["ledger"].actions[slug].body)
    return await runner.act(lab, WIDGETS["ledger"], Actor(SANDBOX, SANDBOX), slug, body)


async def test_the_dives_questions_are_offered_where_the_lesson_turns_and_judged_by_valkey(conn) -> None:
    lab = lab_with_questions(conn)
    await show(conn, "ledger")
    first = (await reader.snapshot(conn, lab.catalog, WIDGETS["ledger"], SANDBOX))[1]
    assert [q.id for q in first.questions] == ["ledger-result", "ledger-ill-formed"]
    right = await answer(lab, "next", "ledger-result", 1)
    assert right.verdict is not None and right.verdict.text == "Right: Valkey holds a result list of length 1."
    await act(conn, "ledger", "next")
    wrong = await answer(lab, "next", "ledger-result", 3)  # flow 3 is refused: the result stays at 2
    assert wrong.verdict is not None and not wrong.verdict.right
    assert wrong.verdict.text == ("Not quite: you said 3; Valkey holds a result list of length 2. "
                                  "This flow was refused: it adds no entry.")
    asked = (await reader.snapshot(conn, lab.catalog, WIDGETS["ledger"], SANDBOX))[1].questions
    assert [q.id for q in asked] == ["ledger-flow4", "ledger-ill-formed"]  # one per action, the first that holds
    held = await answer(lab, "next", "ledger-flow4", "held")
    assert held.verdict is not None and held.verdict.right and await state_of(conn, J) == "awaiting_children"
    gate = await answer(lab, "ill-formed", "ledger-ill-formed", 0)
    assert gate.verdict is not None and gate.verdict.right


# -- the learner's own batch over HTTP: a body that does not fit answers 400 first ----

def too_many(n: int) -> list[dict[str, Any]]:
    return [{"parent": {"id": f"JOBp{i}"}, "children": [{"id": f"JOBc{i}"}]} for i in range(n)]


BAD_BODIES = {
    "no flows": {"flows": []},
    "past max_flows": {"flows": too_many(ledger_batch.LIMITS.max_flows + 1)},
    "past max_children": {"flows": [{"parent": {"id": "JOBp"}, "children": [
        {"id": f"JOBc{i}"} for i in range(ledger_batch.LIMITS.max_children + 1)]}]},
    "a payload past max_payload_bytes": {"flows": [{"parent": {"id": "JOBp", "payload": "é" * (
        ledger_batch.LIMITS.max_payload_bytes // 2 + 1)}, "children": [{"id": "JOBc"}]}]},
    "an unknown field": {"flows": too_many(1), "dry_run": True},
    "nested children": {"flows": [{"parent": {"id": "JOBp"}, "children": [{"id": "JOBc", "children": []}]}]},
    "a queue the ledger does not have": {"flows": [{"parent": {"id": "JOBp"},
                                                    "children": [{"id": "JOBc", "queue": "s9999999999.fanin"}]}]},
    "an id that is not a string": {"flows": [{"parent": {"id": 7}, "children": [{"id": "JOBc"}]}]},
    "an id past its bound": {"flows": [{"parent": {"id": "J" * 257}, "children": [{"id": "JOBc"}]}]},
    "one id twice in a flow": {"flows": [{"parent": {"id": "JOBp"}, "children": [{"id": "JOBc"}, {"id": "JOBc"}]}]},
}


def test_a_batch_that_does_not_fit_answers_400_and_nothing_runs_but_an_ill_formed_id_reaches_the_gate(
        clean: LiveSite) -> None:
    client, store = clean.visitor("/batches/bulk-flows"), clean.redis()
    origin = {"Origin": clean.url}
    assert client.get("/api/widgets/ledger/state").status_code == 200
    assert client.post("/api/widgets/ledger/next", json={}, headers=origin).status_code == 200
    sandbox = sandbox_of(client)
    state = f"lab:{{{sandbox}.ledger.orders}}:state"
    assert store.exists(state)

    def held() -> tuple[Any, ...]:
        names = sorted(store.keys(f"emq:{{{sandbox}.*"))
        return tuple(store.dump(n) for n in names), tuple(names), store.hgetall(state)

    before = held()
    for why, body in BAD_BODIES.items():
        answered = client.post("/api/widgets/ledger/own-batch", json=body, headers=origin)
        assert answered.status_code == 400, why
        assert answered.json()["error"].startswith("the body does not fit this action"), why
        assert held() == before, why
    assert client.post("/api/widgets/ledger/own-batch", content=b"{not json", headers=origin).status_code == 400
    assert held() == before
    spoiled = {"flows": [{"parent": {"id": "JOBp"}, "children": [{"id": "JOB c"}]}]}
    answered = client.post("/api/widgets/ledger/own-batch", json=spoiled, headers=origin)
    assert answered.status_code == 200
    assert answered.json()["outcome"]["kind"] == "refused"
    assert "ill-formed job id 'JOB c'" in answered.json()["outcome"]["text"]
    assert store.keys(f"emq:{{{sandbox}.*") == []



async def test_the_tour_runs_on_a_cluster_with_billing_on_another_node(cluster_conn) -> None:
    await show(cluster_conn, "ledger")
    done = await act(cluster_conn, "ledger", "goto", step=6)  # flow 4 retried and released across slots
    assert "Step 6 of 9" in done.outcome["text"]
    assert await state_of(cluster_conn, J) == "pending"
    assert await readout_is_true(cluster_conn) == ("Flow 4 of 4 added one at a time: 2 entries in the result; "
                                                   "parents — 1: held, 2: held, 3: no row, 4: released.")
    own = await act(cluster_conn, "ledger", "own-batch", flows=ledger_batch.sample_batch())
    assert own.outcome["reached"] == ["own"] and await state_of(cluster_conn, "JOBmine4") == "awaiting_children"
