"""What one "Complete child" sends to Valkey, counted on the wire.

Round trips and commands do not drift with machine noise, so the figure
docs/PERFORMANCE.md reports is asserted here: a change that adds a command
to the hot path fails this test instead of creeping in unnoticed.

The click's round trips, in order: the way in and the lock (activity, the
address's budget, `queue_keys` begin), `claim` and `complete` in one
pipeline (the lock's read names the job claim takes and its token), and the
close (the progress write beside `queue_keys` finish, which deletes the
:logs key and reads the counter and the parent for the sentence).
"""

from __future__ import annotations

from bench import bench_commands
from server.valkey.process import ValkeyProcess

# Reset, then "Complete child" (which claims the child first), as the fan-in's tour starts.
ROUND_TRIPS = 3
COMMANDS = 7
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
