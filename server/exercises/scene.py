"""A run and its scenes: where a check lands keys and calls the learner's script.

``Run`` is one learner's run on one grader and the script time it spent (a budget across checks).
``Scene`` is one check's part: its queues, the keys it judges, and ``learner()``, the learner's
script under the watchdog, pictured before and after. Only that call is the learner's: everything
else goes through ``server.emq`` on the admin client.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from redis.asyncio import Redis

from server.emq import keyspace
from server.exercises.grader import Grader
from server.exercises.outcome import QUEUE, CheckResult, Picture, picture, rename
from server.exercises.watchdog import Erred, Halted, Replied


class CheckFailed(Exception):
    """A check's verdict against the script; ``said`` is its one sentence."""

    def __init__(self, said: str) -> None:
        super().__init__(said)
        self.said = said


@dataclass(frozen=True)
class Check:
    """A named scenario; ``run`` lands it, judges it and returns its passing sentence."""

    name: str
    run: Callable[[Scene], Awaitable[str]]


@dataclass
class Run:
    """One learner's run on one grader, as the run's own Valkey user (``client``)."""

    grader: Grader
    client: Redis
    sha: str
    run_id: str
    spent: float = 0.0  # seconds of the learner's script so far


class Scene:
    """One check's scenario inside a run."""

    def __init__(self, run: Run, index: int) -> None:
        self.run = run
        self.index = index
        self.judged: list[str] = []
        self.step: str | None = None
        self.before: Picture | None = None
        self.after: Picture | None = None
        self.outcome: Replied | Erred | None = None
        self.shown: dict[str, str] = {}  # each queue of the scene -> how the course writes it

    @property
    def admin(self) -> Redis:
        """The grader's admin client: the course's scripts run on it."""
        return self.run.grader.admin_client()

    def queue(self, role: str, shown: str = QUEUE) -> str:
        """A queue of this scene: ``<run>.<check>.<role>``, inside the run's pattern;
        ``shown`` is how the learner reads it (``emq:{q}:…``)."""
        queue = keyspace.check_queue(f"{self.run.run_id}.{self.index}.{role}")
        self.shown[queue] = shown
        return queue

    def judge(self, keys: Sequence[str]) -> None:
        """Keys the check reads: always in the picture, whatever else is there."""
        self.judged.extend(key for key in keys if key not in self.judged)

    @property
    def after_step(self) -> str:
        """`` after <the learner's last call>`` for a sentence, or nothing before the first."""
        return f" after {self.step}" if self.step else ""

    async def picture(self) -> Picture:
        return await picture(self.admin, self.judged, "emq:{" + f"{self.run.run_id}.{self.index}." + "*")

    async def learner(self, keys: Sequence[str], args: Sequence[str | int], step: str) -> None:
        """The learner's script in place of the course's, framed by two pictures: the check judges
        its ``outcome`` and the keys ``after`` (``checks.judge``)."""
        self.step = step
        self.before = await self.picture()
        self.after = None
        self.outcome = await self.call(keys, args)
        self.after = await self.picture()

    async def call(self, keys: Sequence[str], args: Sequence[str | int]) -> Replied | Erred:
        """One call of the learner's script on the grader, within the run's budget of script time."""
        run, budget = self.run, self.run.grader.limits.budget_ms
        if run.spent * 1000 >= budget:
            raise Halted(f"stopped: the script had used the run's {budget} ms of script time", lost=False)
        outcome, took = await run.grader.call(run.client, run.sha, keys, args)
        run.spent += took
        return outcome

    def result(self, name: str, said: str) -> CheckResult:
        """A failed check, with the pictures of the learner's last call in it,
        its sentence written with the queues as the course writes them."""
        names = tuple(self.shown.items())
        return CheckResult(name=name, passed=False, said=rename(said, names), step=self.step,
                           before=self.before, after=self.after, names=names)


SHOWN_CHARS = 120  # a said quotes at most this much of a value: it is one sentence


def clip(text: str) -> str:
    """`text` whole, or its start cut at a word's end (never mid-word) with its length said."""
    if len(text) <= SHOWN_CHARS:
        return text
    start = text[:SHOWN_CHARS]
    if " " in start[SHOWN_CHARS // 2:] and not text[SHOWN_CHARS].isspace():
        start = start.rsplit(" ", 1)[0]
    return f"{start.rstrip()}… ({len(text):,} characters)"
