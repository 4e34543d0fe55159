"""The native refusal widget on a real Valkey: each line sent, each reply kept.

With the module (the managed valkey-server loads it), the two refusals leave
every key byte for byte as it was and the two scripted/native completions
land; without it (a Valkey that refuses MODULE LOAD) the widget shows
Valkey's own "unknown command" and says the native executor is absent.
`emqlab module-path` prints where the module is.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from bench import bench_native
from server.emq import keyspace
from server.valkey import native
from server.valkey.process import ValkeyProcess
from server.widgets.base import Context
from server.widgets.native import CHILD, FLAT, PARENT, Native
from tests.support import ROOT, running

from .conftest import act, members, row

SANDBOX = "s0123456789"
QUEUE = f"{SANDBOX}.native"


@pytest.fixture
async def widget(conn) -> tuple[Native, Context]:
    found, ctx = Native(), Context(conn, SANDBOX)
    await found.show(ctx)
    return found, ctx


async def last(conn) -> dict:
    """The press the widget recorded, read back from its lab hash in Valkey."""
    return json.loads(await conn.hget(f"lab:{{{QUEUE}}}:state", "last"))


def test_emqlab_module_path_prints_the_absolute_path_of_the_built_module() -> None:
    done = subprocess.run([sys.executable, "-m", "server.cli", "module-path"], cwd=ROOT,
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip() == str(native.module_path())
    assert native.module_path().is_absolute() and native.module_path().is_file()


async def test_the_scenario_lands_a_held_parent_a_claimed_child_and_a_claimed_flat_job(widget, conn) -> None:
    assert (await row(conn, QUEUE, PARENT))["state"] == "awaiting_children"
    assert (await row(conn, QUEUE, CHILD))["state"] == "active"
    assert (await row(conn, QUEUE, FLAT))["state"] == "active"
    assert sorted(await members(conn, QUEUE, "active")) == [CHILD, FLAT]


async def test_the_native_line_is_refused_and_every_key_stays_byte_for_byte(widget, conn) -> None:
    found, ctx = widget
    outcome = await act(found, ctx, "native", {})
    record = await last(conn)
    assert record["line"].startswith(f"EMQ.COMPLETE 5 {keyspace.queue_key(QUEUE, 'active')} ")
    assert record["reply"] == "(error) EMQSTATE complete flow not native"
    assert record["unchanged"] is True and record["before"] == record["after"]
    assert outcome.kind == "refused" and "nothing changed" in outcome.text


async def test_the_flat_form_on_the_child_is_refused_and_changes_nothing(widget, conn) -> None:
    found, ctx = widget
    await act(found, ctx, "flat-form", {})
    record = await last(conn)
    assert record["line"] == (f"EMQ.COMPLETE 2 {keyspace.queue_key(QUEUE, 'active')} "
                              f"{keyspace.job_key(QUEUE, CHILD)} {CHILD} 1 {keyspace.base(QUEUE)}")
    assert record["reply"] == "(error) EMQSTATE complete flow not native"
    assert record["unchanged"] is True


async def test_the_script_line_completes_the_child_and_releases_the_parent(widget, conn) -> None:
    found, ctx = widget
    await act(found, ctx, "script", {})
    record = await last(conn)
    assert record["line"].startswith("EVALSHA ") and " 5 " in record["line"]
    assert record["reply"] == "(integer) 1"
    assert record["unchanged"] is False
    assert {"name": keyspace.job_key(QUEUE, CHILD), "kind": "gone"} in record["changes"]
    assert (await row(conn, QUEUE, PARENT))["state"] == "pending"


async def test_the_flat_job_completes_natively(widget, conn) -> None:
    found, ctx = widget
    await act(found, ctx, "flat-job", {})
    record = await last(conn)
    assert record["reply"] == "(integer) 1"
    assert await row(conn, QUEUE, FLAT) == {}
    assert await conn.hget(keyspace.metrics_key(QUEUE), "count") == "1"
    snapshot = await found.snapshot(ctx)
    assert snapshot["readout"].startswith("Complete a flat job natively: Valkey answered (integer) 1")


def test_without_the_module_the_widget_shows_unknown_command_and_says_the_executor_is_absent() -> None:
    # A plain Valkey: no --loadmodule, and MODULE LOAD is off (its default).
    with ValkeyProcess(load_module=False) as valkey, running(valkey.url) as site:
        client = site.visitor()
        answer = client.post("/api/widgets/native/native", json={})
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert "absent" in body["outcome"]["text"]
        last_press = body["snapshot"]["picture"]["last"]
        assert last_press["reply"].startswith("(error) ERR unknown command 'EMQ.COMPLETE'")
        assert last_press["unchanged"] is True
        assert "native executor is absent" in body["snapshot"]["readout"]
        # the script path still runs: it is the executor every Valkey has
        scripted = client.post("/api/widgets/native/script", json={}).json()
        assert scripted["snapshot"]["picture"]["last"]["reply"] == "(integer) 1"


def test_a_valkey_that_allows_module_load_gets_the_module_from_the_site() -> None:
    with ValkeyProcess(load_module=False, extra_args=("--enable-module-command", "yes")) as valkey, \
            running(valkey.url) as site:
        client = site.visitor()
        body = client.post("/api/widgets/native/flat-form", json={}).json()
        assert body["snapshot"]["picture"]["last"]["reply"] == "(error) EMQSTATE complete flow not native"


async def test_the_native_benchmark_runs_both_executors_to_the_same_metrics(valkey) -> None:
    # a harness check, not a timing: bench/bench_native.py prints the figures
    found = await bench_native.run(valkey.url, 1200)
    assert found["same_metrics"] is True and found["completions"] == 1200
