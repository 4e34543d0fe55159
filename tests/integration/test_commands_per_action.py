"""What one "Complete child" sends to Valkey, counted on the wire.

Round trips and commands do not drift with machine noise, so the figure
docs/PERFORMANCE.md reports is asserted here: a change that adds a command
to the hot path fails this test instead of creeping in unnoticed.
"""

from __future__ import annotations

from bench import bench_commands
from server.valkey.process import ValkeyProcess

# Reset, then "Complete child" (which claims the child first), as the fan-in's tour starts.
ROUND_TRIPS = 6
COMMANDS = 9


def test_complete_child_sends_no_more_round_trips_and_commands_than_reported(valkey: ValkeyProcess) -> None:
    counted = bench_commands.fanin_complete_child(valkey.url)
    assert counted["round_trips"] <= ROUND_TRIPS, counted
    assert counted["commands"] <= COMMANDS, counted
    # every command but the deferred :logs DEL and the progress write is a script call
    assert counted["names"].count("EVALSHA") == COMMANDS - 2, counted
