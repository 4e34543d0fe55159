"""A learner's kept work on the exercises: the last script the graders ran of each, in
``lab:{<sandbox>}:work`` beside the progress record (which every action answers whole: scripts of
16 KiB would ride along), with the same slot and lifetime (one DEL: ``progress.clear``). The best
run stays ``ex:<exercise>`` in the progress record."""

from __future__ import annotations

from dataclasses import dataclass

from server.emq.wire import Conn, Pipe
from server.sandboxes import keys, progress


@dataclass(frozen=True)
class Mine:  # what ``GET /api/exercises/<name>`` answers as ``mine``
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
