"""What one "Complete child" sends to Valkey, counted on the wire.

Round trips and commands do not drift with machine noise, so the figure
docs/PERFORMANCE.md reports is asserted here: a change that adds a command
to the hot path fails this test instead of creeping in unnoticed.

The click's round trips, in order: the way in and the lock (activity, the
address's budget, `queue_keys` begin), then the close: `claim` and
`complete` (the lock's read names the job claim takes and its token), the
progress write, and `queue_keys` finish, which proves the completion, deletes
the :logs key and reads the counter and the parent for the sentence.
"""

from __future__ import annotations

import pytest
import redis

from bench import bench_commands
from server.valkey.process import ValkeyProcess
from server.web import entry

# Reset, then "Complete child" (which claims the child first), as the fan-in's tour starts.
ROUND_TRIPS = 2
COMMANDS = 7
# The fan-in's Reset: the way in and the lock (whose call removes the keys and
# writes the fresh lab hash); the close: `enqueue_flow`, the children's
# parent_policy HSETs, the progress write and the finish.
RESET_ROUND_TRIPS = 2
# With the child already claimed ("Claim", then "Complete child"): no claim command.
CLAIMED_ROUND_TRIPS = 3
CLAIMED_COMMANDS = 6


def test_complete_child_sends_exactly_the_round_trips_and_commands_reported(valkey: ValkeyProcess) -> None:
    # exactly: fewer means the figure (or the counter) is out of date, and a
    # counter that sees nothing must not pass for a lean click
    counted = bench_commands.fanin_complete_child(valkey.url)
    assert counted["round_trips"] == ROUND_TRIPS, counted
    assert counted["commands"] == COMMANDS, counted
    # every command but the progress write is a script call: the :logs DEL rides inside `finish`
    assert counted["names"].count("EVALSHA") == COMMANDS - 1, counted
    assert "DEL" not in counted["names"], counted


def test_completing_a_claimed_child_costs_one_command_less(valkey: ValkeyProcess) -> None:
    with bench_commands.in_process_site(valkey.url) as client:
        client.get(bench_commands.FANIN_DIVE)
        sandbox = bench_commands.sandbox_of(client)
        bench_commands.count(client, sandbox, "POST", "/api/widgets/fanin/reset")
        bench_commands.count(client, sandbox, "POST", "/api/widgets/fanin/claim")
        counted = bench_commands.count(client, sandbox, "POST", "/api/widgets/fanin/complete-child")
    assert counted["round_trips"] == CLAIMED_ROUND_TRIPS, counted
    assert counted["commands"] == CLAIMED_COMMANDS, counted


def test_the_fan_ins_reset_lands_its_flow_and_policies_in_the_close(valkey: ValkeyProcess) -> None:
    with bench_commands.in_process_site(valkey.url) as client:
        client.get(bench_commands.FANIN_DIVE)
        sandbox = bench_commands.sandbox_of(client)
        bench_commands.count(client, sandbox, "POST", "/api/widgets/fanin/reset")  # lands the first time
        counted = bench_commands.count(client, sandbox, "POST", "/api/widgets/fanin/reset")
        rows = client.get("/api/widgets/fanin/state").json()["snapshot"]["queues"][0]["keys"]
    assert counted["round_trips"] == RESET_ROUND_TRIPS, counted
    assert counted["names"].count("HSET") >= 3, counted  # one parent_policy per child (and the lab hash)
    policies = {k["name"].rsplit(":", 1)[1]: k["value"].get("parent_policy") for k in rows
                if k["type"] == "hash" and ":job:JOBchild" in k["name"]}
    assert policies == {"JOBchild1": "fp", "JOBchild2": "fp", "JOBchild3": "fp"}


def test_a_pages_read_of_a_widget_is_one_round_trip_with_its_activity_record(
        valkey: ValkeyProcess, monkeypatch: pytest.MonkeyPatch) -> None:
    with bench_commands.in_process_site(valkey.url) as client:
        client.get(bench_commands.FANIN_DIVE)
        sandbox = bench_commands.sandbox_of(client)
        bench_commands.count(client, sandbox, "GET", "/api/widgets/fanin/state")  # lands the scenario
        plain = redis.Redis.from_url(valkey.url, decode_responses=True)
        plain.hset(f"lab:{{{sandbox}}}:meta", mapping={"widget": "nothing", "seen": "0"})
        again = bench_commands.count(client, sandbox, "GET", "/api/widgets/fanin/state")
        meta = plain.hgetall(f"lab:{{{sandbox}}}:meta")
        # once this worker admitted the sandbox lately, the admission waits; the activity rides with the read
        monkeypatch.setattr(entry, "RECENT_SEEN", 0.0)
        later = bench_commands.count(client, sandbox, "GET", "/api/widgets/fanin/state")
        plain.close()
    assert again["round_trips"] == 1, again
    assert again["names"].count("EVALSHA") == 1 and "HSET" in again["names"], again
    assert meta["widget"] == "fanin" and float(meta["seen"]) > 0  # the record was written all the same
    assert later["round_trips"] == 2, later  # the admission again, then the read
