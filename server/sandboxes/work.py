"""A learner's kept work on the exercises: the last script each one ran.

The script lives beside the progress record, in the sandbox's own hash
``lab:{<sandbox>}:work`` (field: the exercise, value: the script), not in
the progress hash itself: every action's ``record.lua`` answers the whole
progress record and every snapshot reads it, and three scripts of up to
16 KiB would ride along each time. The best run stays where it always was,
``ex:<exercise>`` in the progress record (``record.lua`` never lowers it).

Only a script the graders ran is kept: a refusal (a script that does not
compile, one too large, a run refused for rate) writes nothing, like every
other refused request. Both records go together: same slot, same lifetime,
one DEL at "Start over" (``progress.clear``) and at the sandbox's removal.
"""

from __future__ import annotations

from dataclasses import dataclass

from server.emq.wire import Conn, Pipe
from server.sandboxes import keys, progress


@dataclass(frozen=True)
class Mine:
    """What ``GET /api/exercises/<name>`` answers as ``mine``."""

    script: str | None
    best: tuple[int, int] | None

    def as_json(self) -> dict[str, object]:
        best = {"passed": self.best[0], "total": self.best[1]} if self.best else None
        return {"script": self.script, "best": best}


def keep(pipe: Pipe, sandbox: str, exercise: str, script: str, ttl: int) -> None:
    """Queue the writes that keep ``script`` as the learner's last for ``exercise``."""
    pipe.hset(keys.work_key(sandbox), exercise, script)
    pipe.expire(keys.work_key(sandbox), ttl)


async def mine(conn: Conn, sandbox: str, exercise: str) -> Mine:
    """The learner's last script and best run of ``exercise``: one round trip."""
    async with conn.pipeline(transaction=False) as pipe:
        pipe.hget(keys.work_key(sandbox), exercise)
        pipe.hget(keys.progress_key(sandbox), f"ex:{exercise}")
        script, best = await pipe.execute()
    return Mine(script, progress.exercise_best({f"ex:{exercise}": best or ""}, exercise))
