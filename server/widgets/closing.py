"""What an action leaves for its closing round trip, and how that trip proves it.

An action's last round trip (`turn.finish`) records its outcome, lets go of
its lock and reads the snapshot. An action whose writes need no reply to be
decided can send them in that same trip, just ahead of the finish, instead
of in a round trip of their own: "Complete child" claims and completes the
child its lock's read says claim hands out; a Reset lands its flow. Its
outcome is then written before Valkey has answered those writes, so the
finish records it only on a proof, read in the same script call: the effect
the outcome states (the child counted in its parent's `:processed`, the
parent's row there). Without it (a guess that met a changed queue, a script
Valkey had forgotten after SCRIPT FLUSH) the finish writes nothing and keeps
the lock, and the action runs again from what Valkey holds, each write in a
round trip of its own (`turn.run`).

`turn.run` opens a `Closing` for the action the request names. It stays shut
(`Context.closing` is None) wherever something reads the keys between the
action and its finish: a prediction judged on them, a replayed tour step.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from server.emq.pipeline import Batch


@dataclass
class Closing:
    """The action's writes for the closing round trip, and their proof."""

    batch: Batch = field(default_factory=Batch)
    # Reads of the widget's first queue (GET, HGET, EXISTS, ...), each of
    # which must find something for the outcome to stand.
    proof: list[list[str]] = field(default_factory=list)

    def prove(self, *command: str) -> None:
        self.proof.append(list(command))

    def proof_json(self) -> str:
        """`queue_keys.lua`'s ARGV for the proof ('' when nothing was left)."""
        return json.dumps(self.proof) if self.proof else ""
