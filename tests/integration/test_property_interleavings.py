"""Property: under any interleaving the fan-in counts each child once.

Hypothesis draws flows (children spread over three queues) and a schedule of
claims, completions, Pump ticks, crashes between read and trim, redelivered
and stale completions. After every step, for every parent:

* ``:processed`` holds exactly the completions that reached it, each once,
  with the value the child completed with;
* ``:dependencies`` == children - recorded (never counted twice);
* the parent is held (in no state set) while anything is outstanding, and
  released exactly once: once claimed it never re-enters ``pending``.

At the end everything is drained and every parent must have been released.
300 examples per backend in `make test` (about 30 s of CPU); `make test-deep` searches
3,000 (EMQ_PROPERTY_EXAMPLES sets any number).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from server.emq import flows, jobs, keyspace, pump

Q, MAIL, BILL = "orders", "mail", "billing"
QUEUES = (Q, MAIL, BILL)
EXAMPLES = int(os.environ.get("EMQ_PROPERTY_EXAMPLES", "300"))

OPS = ("claim", "complete", "complete", "redeliver", "stale", "pump", "crash")

flow_shapes = st.lists(
    st.lists(st.sampled_from(QUEUES), min_size=1, max_size=4), min_size=1, max_size=2
)
schedules = st.lists(
    st.tuples(st.sampled_from(OPS), st.integers(0, 10_000)), min_size=1, max_size=30
)


@dataclass
class Model:
    children: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # parent -> [(queue, id)]
    parent_of: dict[str, str] = field(default_factory=dict)
    active: dict[tuple[str, str], int] = field(default_factory=dict)  # claimed children
    finished: list[tuple[str, str, int]] = field(default_factory=list)
    results: dict[str, str] = field(default_factory=dict)  # child -> value it completed with
    parents_claimed: set[str] = field(default_factory=set)


async def _claim(conn, model: Model, queue: str) -> None:
    got = await jobs.claim(conn, queue)
    if got is None:
        return
    job_id, token = got
    if job_id in model.children:
        # a released parent: claimed once, kept active, never completed here
        assert job_id not in model.parents_claimed, f"{job_id} released twice"
        model.parents_claimed.add(job_id)
    else:
        model.active[(queue, job_id)] = token


async def _step(conn, model: Model, op: str, pick: int) -> None:
    if op == "claim":
        await _claim(conn, model, QUEUES[pick % 3])
    elif op in ("complete", "stale") and model.active:
        queue, job_id = sorted(model.active)[pick % len(model.active)]
        token = model.active[(queue, job_id)]
        if op == "stale":
            try:
                await jobs.complete(conn, queue, job_id, token + 1)
            except jobs.Stale:
                return
            raise AssertionError("a stale token completed")
        await jobs.complete(conn, queue, job_id, token, result=f"v{pick}")
        del model.active[(queue, job_id)]
        model.finished.append((queue, job_id, token))
        model.results[job_id] = f"v{pick}"
    elif op == "redeliver" and model.finished:
        queue, job_id, token = model.finished[pick % len(model.finished)]
        try:
            await jobs.complete(conn, queue, job_id, token, result="late")
        except jobs.Gone:
            return
        raise AssertionError("a redelivered completion was accepted")
    elif op == "pump":
        await pump.deliver_flow_completions(conn, (MAIL, BILL)[pick % 2], 1 + pick % 3)
    elif op == "crash":
        # read and deliver, then "crash" before the trim
        queue = (MAIL, BILL)[pick % 2]
        await pump.deliver_page(conn, queue, await pump.read_page(conn, queue, 1 + pick % 3))


async def _check(conn, model: Model) -> None:
    pipe = conn.pipeline(transaction=False)
    parents = sorted(model.children)
    for parent in parents:
        pipe.get(keyspace.dependencies_key(Q, parent))
        pipe.hgetall(keyspace.processed_key(Q, parent))
        pipe.hget(keyspace.job_key(Q, parent), "state")
        pipe.zscore(keyspace.queue_key(Q, "pending"), parent)
        pipe.zscore(keyspace.queue_key(Q, "active"), parent)
    replies = await pipe.execute()
    for i, parent in enumerate(parents):
        deps, processed, state, in_pending, in_active = replies[5 * i : 5 * i + 5]
        kids = {job_id for _, job_id in model.children[parent]}
        assert set(processed) <= kids
        for child, value in processed.items():
            assert model.results.get(child) == value, f"{child} recorded without completing"
        assert int(deps) == len(kids) - len(processed), f"{parent}: counter drifted"
        if int(deps) > 0:
            assert state == "awaiting_children" and in_pending is None and in_active is None
        elif parent in model.parents_claimed:
            assert state == "active" and in_pending is None and in_active is not None
        else:
            assert state == "pending" and in_pending is not None


async def _drain(conn, model: Model) -> None:
    for _ in range(20):
        for queue in QUEUES:
            while await jobs.claim(conn, queue) is not None:
                pass
        for queue in QUEUES:
            for job_id in await conn.zrange(keyspace.queue_key(queue, "active"), 0, -1):
                if job_id in model.children:
                    model.parents_claimed.add(job_id)
                    continue
                token = int(await conn.hget(keyspace.job_key(queue, job_id), "attempts"))
                await jobs.complete(conn, queue, job_id, token, result=f"d-{job_id}")
                model.results[job_id] = f"d-{job_id}"
        for queue in (MAIL, BILL):
            await pump.deliver_flow_completions(conn, queue, 100)
        if all(p in model.parents_claimed for p in model.children):
            return


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(shapes=flow_shapes, schedule=schedules)
async def test_every_completion_is_counted_once_and_each_parent_released_once(
    conn, shapes: list[list[str]], schedule: list[tuple[str, int]]
) -> None:
    await conn.flushdb()
    model = Model()
    for f, queues in enumerate(shapes):
        parent = f"JOBp{f}"
        kids = [(queue, f"JOBp{f}c{c}") for c, queue in enumerate(queues)]
        spec = {
            "parent": {"id": parent, "payload": "x"},
            "children": [{"id": cid, "payload": "y", "queue": queue} for queue, cid in kids],
        }
        await flows.add(conn, Q, spec)
        model.children[parent] = kids
        for _, cid in kids:
            model.parent_of[cid] = parent
    await _check(conn, model)
    for op, pick in schedule:
        await _step(conn, model, op, pick)
        await _check(conn, model)
    await _drain(conn, model)
    await _check(conn, model)
    assert model.parents_claimed == set(model.children)
    for queue in (MAIL, BILL):
        assert await conn.llen(keyspace.outbox_key(queue)) == 0
