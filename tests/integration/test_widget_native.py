"""The native refusal widget on a real Valkey: each line sent, each reply kept.

With the module (every managed valkey-server loads it), the two refusals
leave every key byte for byte as it was and the scripted and native
completions land; without it (a Valkey that refuses MODULE LOAD) the widget
shows Valkey's own "unknown command" and says the native executor is absent.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import subprocess
import sys
from typing import Any

import redis.asyncio as aioredis

from server.emq import keyspace, registry
from server.valkey import native
from server.valkey.process import ValkeyProcess
from server.widgets import WIDGETS, questions, reader, runner
from server.widgets.base import Body, Prediction
from server.widgets.native import ABSENT, CHILD, FLAT, PARENT
from server.widgets.runner import Lab
from server.widgets.snapshot import Catalog
from server.widgets.turn import Actor
from tests.support import ROOT, running
from tests.widgets import SANDBOX, act, show, snapshot_of

from .conftest import members, row

NAME = "native"
OTHER = "s9876543210"
Q = f"{SANDBOX}.native"
ACTIONS = ("native", "flat-form", "script", "flat-job")


async def last(conn: Any, sandbox: str = SANDBOX) -> dict[str, Any]:
    """The press the widget recorded, read back from its lab state in Valkey."""
    return json.loads(await conn.hget(f"lab:{{{sandbox}.native}}:state", "last"))  # type: ignore[no-any-return]


def leases_left_out(record: dict[str, Any]) -> dict[str, Any]:
    """A press's record with the scores of `active` dropped (clock readings of each claim)."""
    def plain(key: dict[str, Any]) -> dict[str, Any]:
        return {**key, "value": [m for m, _ in key["value"]]} if key["name"].endswith(":active") else key

    return {**record, "before": [plain(k) for k in record["before"]], "after": [plain(k) for k in record["after"]]}


async def dumps(conn: Any, sandbox: str = SANDBOX) -> dict[str, bytes]:
    """Every key of the widget's queue with its bytes, read by the test itself."""
    return {name: await conn.dump(name) async for name in conn.scan_iter(match=f"emq:{{{sandbox}.native}}:*")}


async def keys(conn: Any, sandbox: str = SANDBOX) -> dict[str, Any]:
    """The queue's keys as the snapshot shows them, lease deadlines left out
    (the scores of `active` are clock readings taken when each child was claimed)."""
    snap = await snapshot_of(conn, NAME, sandbox)
    found = {}
    for key in snap.queues[0]["keys"]:
        value = key["value"]
        if key["name"].endswith(":active"):
            value = [member for member, _ in value]
        found[key["name"]] = (key["type"], value)
    return found


async def assert_readout_is_true(conn: Any, sandbox: str = SANDBOX) -> str:
    """The readout says what the rows, sets and counters hold."""
    queue, readout = f"{sandbox}.native", (await snapshot_of(conn, NAME, sandbox)).readout
    child, parent, flat = [await row(conn, queue, i) for i in (CHILD, PARENT, FLAT)]
    child_sets = [s for s in keyspace.STATE_SETS if CHILD in await members(conn, queue, s)]
    if child:
        assert f"{CHILD}: {child['state']}, in {', '.join(child_sets) or 'no state set'}" in readout, readout
    else:
        processed = await conn.hgetall(keyspace.processed_key(queue, PARENT))
        assert f"{CHILD}: no row" in readout and ((CHILD in processed) == ("counted" in readout)), readout
    if not parent:
        assert "no parent row" in readout, readout
    elif parent["state"] == "awaiting_children":
        assert "the parent stays held (awaiting_children)" in readout, readout
    else:
        assert f"the parent is released: state {parent['state']}" in readout, readout
    deps = await conn.get(keyspace.dependencies_key(queue, PARENT))
    assert f":dependencies = {deps if deps is not None else '—'}" in readout, readout
    assert (f"{FLAT}: {flat['state']}" if flat else f"{FLAT}: no row") in readout, readout
    count = await conn.hget(keyspace.metrics_key(queue), "count")
    assert (f"metrics:completed count = {count}" in readout) == (count is not None), readout
    return readout


async def test_the_scenario_lands_a_held_parent_a_claimed_child_and_a_claimed_flat_job(conn: Any) -> None:
    await show(conn, NAME)
    assert (await row(conn, Q, PARENT))["state"] == "awaiting_children"
    assert (await row(conn, Q, CHILD))["state"] == "active"
    assert (await row(conn, Q, FLAT))["state"] == "active"
    assert sorted(await members(conn, Q, "active")) == [CHILD, FLAT]
    assert await assert_readout_is_true(conn) == (
        "JOBchild: active, in active; the parent stays held (awaiting_children), in no state set, "
        ":dependencies = 1; JOBflat: active, in active.")


async def test_the_native_line_is_refused_and_every_key_stays_byte_for_byte(conn: Any) -> None:
    await show(conn, NAME)
    before = await dumps(conn)
    acted = await act(conn, NAME, "native")
    assert await dumps(conn) == before
    record = await last(conn)
    assert record["line"].startswith("EMQ.COMPLETE 5 emq:{native}:active emq:{native}:job:JOBchild ")
    assert record["line"].endswith(" JOBchild 1 emq:{native}: JOBparent packed")
    assert record["reply"] == "(error) EMQSTATE complete flow not native"
    assert record["unchanged"] is True and record["before"] == record["after"] and record["changes"] == []
    assert acted.outcome["kind"] == "refused" and acted.outcome["reached"] == ["refused"]
    assert acted.outcome["text"] == ("EMQ.COMPLETE answered (error) EMQSTATE complete flow not native; "
                                     "every key is byte-for-byte as before (DUMP compared).")


async def test_the_flat_form_on_the_child_is_refused_and_changes_nothing(conn: Any) -> None:
    await show(conn, NAME)
    before = await dumps(conn)
    acted = await act(conn, NAME, "flat-form")
    record = await last(conn)
    assert record["line"] == "EMQ.COMPLETE 2 emq:{native}:active emq:{native}:job:JOBchild JOBchild 1 emq:{native}:"
    assert record["reply"] == "(error) EMQSTATE complete flow not native"
    assert record["unchanged"] is True and await dumps(conn) == before
    assert acted.outcome["reached"] == ["flat-refused"]


async def test_the_script_line_completes_the_child_and_releases_the_parent(conn: Any) -> None:
    await show(conn, NAME)
    acted = await act(conn, NAME, "script")
    record = await last(conn)
    assert record["line"].startswith(f"EVALSHA {registry.script('complete').sha} 5 emq:{{native}}:active ")
    assert record["reply"] == "(integer) 1" and record["unchanged"] is False
    assert {"name": "emq:{native}:job:JOBchild", "kind": "gone"} in record["changes"]
    assert {"name": "emq:{native}:job:JOBparent:processed", "kind": "new"} in record["changes"]
    assert (await row(conn, Q, PARENT))["state"] == "pending"
    assert acted.outcome["reached"] == ["scripted"]
    changed = len(record["changes"])
    assert acted.outcome["text"] == f"The script answered (integer) 1; {changed} keys changed (DUMP compared)."
    assert "counted in the parent's :processed" in await assert_readout_is_true(conn)


async def test_the_flat_job_completes_natively(conn: Any) -> None:
    await show(conn, NAME)
    acted = await act(conn, NAME, "flat-job")
    record = await last(conn)
    assert record["line"] == "EMQ.COMPLETE 2 emq:{native}:active emq:{native}:job:JOBflat JOBflat 1 emq:{native}:"
    assert record["reply"] == "(integer) 1" and acted.outcome["reached"] == ["flat-native"]
    assert await row(conn, Q, FLAT) == {}
    assert await conn.hget(keyspace.metrics_key(Q), "count") == "1"
    assert "JOBflat: no row; metrics:completed count = 1" in await assert_readout_is_true(conn)
    again = await act(conn, NAME, "flat-job")
    assert again.outcome["text"].startswith("EMQ.COMPLETE on the flat job answered (integer) 0, no such row;")


async def test_every_outcome_is_one_short_sentence_without_the_line_or_the_sandbox(conn: Any) -> None:
    await show(conn, NAME)
    for slug in (*ACTIONS, *ACTIONS):
        text = (await act(conn, NAME, slug)).outcome["text"]
        assert len(text.split()) <= 25 and "EVALSHA" not in text and SANDBOX not in text, text
    record = await last(conn)
    assert SANDBOX not in json.dumps(record)


async def test_every_reachable_state_has_a_readout_true_to_the_keys(conn: Any) -> None:
    await show(conn, NAME)
    for walk in itertools.product(ACTIONS, repeat=3):
        await act(conn, NAME, "reset")
        await assert_readout_is_true(conn)
        for slug in walk:
            await act(conn, NAME, slug)
            await assert_readout_is_true(conn)
    # a console may take the parent's row away: the sentence follows the keys
    await conn.delete(keyspace.job_key(Q, PARENT))
    assert "no parent row" in await assert_readout_is_true(conn)


async def test_a_deep_link_to_step_n_leaves_what_clicking_steps_one_to_n_leaves(conn: Any) -> None:
    widget = WIDGETS[NAME]
    await show(conn, NAME)
    await show(conn, NAME, OTHER)
    for n in range(1, len(widget.tour) + 1):
        await act(conn, NAME, "goto", step=n)
        await act(conn, NAME, "reset", OTHER)
        for step in widget.tour[:n]:
            for slug, body in step.replay:
                await act(conn, NAME, slug, OTHER, **body)
        assert await keys(conn) == await keys(conn, OTHER)
        assert leases_left_out(await last(conn)) == leases_left_out(await last(conn, OTHER))
        await assert_readout_is_true(conn)


async def test_concurrent_presses_leave_a_state_that_pressing_one_at_a_time_reaches(conn: Any) -> None:
    await show(conn, NAME)
    await asyncio.gather(*(act(conn, NAME, slug) for slug in ("script", "flat-job", "native", "flat-form")))
    await show(conn, NAME, OTHER)
    for slug in ("native", "flat-form", "script", "flat-job"):
        await act(conn, NAME, slug, OTHER)
    # every order lands the same keys: the refusals write nothing, the completions touch different rows
    assert await keys(conn) == await keys(conn, OTHER)
    assert (await last(conn))["action"] in ACTIONS
    await assert_readout_is_true(conn)


CHANGES_KEYS = {"id": "native-changes-keys", "action": "native", "reading": "keys-changed", "answer": "choice",
                "legend": "Predict: will the same line sent as EMQ.COMPLETE change any key?",
                "choices": [["yes", "a key changed by the call"], ["no", "every key as it was before the call"]],
                "says": "{value}", "feedback": [{"answer": "yes", "text": "A refused call leaves Valkey as it was."}]}


async def test_the_keys_changed_question_is_judged_by_the_keys_valkey_holds(conn: Any) -> None:
    widget = WIDGETS[NAME]
    lab = Lab(conn, Catalog(dict(WIDGETS), {NAME: (questions.bind(widget, CHANGES_KEYS),)}))
    actor = Actor(SANDBOX, SANDBOX)
    await show(conn, NAME)
    for said, right in (("yes", False), ("no", True)):
        acted = await runner.act(lab, widget, actor, "native", Body(predict=Prediction("native-changes-keys", said)))
        assert acted.verdict is not None and acted.verdict.right is right and acted.verdict.truth == "no"
    assert acted.verdict.text == "Right: Valkey holds every key as it was before the call."
    # the script's line does change keys: the same reading says so
    before = (await reader.snapshot(conn, lab.catalog, widget, SANDBOX))[0]
    await act(conn, NAME, "script")
    after = (await reader.snapshot(conn, lab.catalog, widget, SANDBOX))[0]
    assert widget.measure("keys-changed", after, before) == "yes"


async def test_without_the_module_the_widget_shows_unknown_command_and_says_the_executor_is_absent() -> None:
    # A plain Valkey: no --loadmodule, and MODULE LOAD off (its default).
    with ValkeyProcess(load_module=False) as valkey:
        plain = aioredis.Redis.from_url(valkey.url, decode_responses=True)
        try:
            assert ABSENT in (await show(plain, NAME)).readout
            acted = await act(plain, NAME, "native")
            assert "native executor is absent" in acted.outcome["text"] and acted.outcome["reached"] == []
            record = await last(plain)
            assert record["reply"].startswith("(error) ERR unknown command 'EMQ.COMPLETE'")
            assert record["absent"] is True and record["unchanged"] is True
            # the script path still runs: it is the executor every Valkey has
            await act(plain, NAME, "script")
            assert (await last(plain))["reply"] == "(integer) 1"
            assert ABSENT in await assert_readout_is_true(plain)
        finally:
            await plain.aclose()


def test_a_valkey_that_allows_module_load_gets_the_module_from_the_site() -> None:
    with ValkeyProcess(load_module=False, extra_args=("--enable-module-command", "yes")) as valkey, \
            running(valkey.url) as site:
        client = site.visitor()
        answer = client.post("/api/widgets/native/flat-form", json={})
        assert answer.status_code == 200, answer.text
        assert answer.json()["outcome"]["text"].startswith("EMQ.COMPLETE in its flat form answered (error) EMQSTATE")
        snapshot = client.get("/api/widgets/native/state").json()["snapshot"]
        assert snapshot["picture"]["last"]["reply"] == "(error) EMQSTATE complete flow not native"
        assert snapshot["picture"]["executor"] == "present"


def test_emqlab_module_path_prints_the_absolute_path_of_the_built_module() -> None:
    done = subprocess.run([sys.executable, "-m", "server.cli", "module-path"], cwd=ROOT,
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip() == str(native.MODULE_PATH)
    assert native.MODULE_PATH.is_absolute() and native.MODULE_PATH.is_file()
