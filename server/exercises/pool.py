"""The grader pool: a few graders, one run each, and a bounded line of waiting runs.

``submit`` admits a run or refuses it at once, never after waiting: ``TooOften`` (the sandbox's
share), ``QueueFull`` (the line or the address's share), ``Restarting`` (every grader failed its
restarts, until ``COOL_OFF`` has passed: the next run then has them tried again, and waits). A
grader the watchdog ended or whose process died is restarted in the background and handed to the
line when it answers: a run that arrives meanwhile waits its turn rather than being refused, since
a runaway can end every grader at once on a busy machine. A caller that stops waiting leaves the
line, and a grader handed to it goes to the next.

The sandboxes' shares and the line's turns by address are kept by ``fair_line``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from types import TracebackType

from redis.exceptions import RedisError

from server.exercises.errors import QueueFull, Restarting, TooOften
from server.exercises.fair_line import FairLine, SandboxShares
from server.exercises.grader import Grader
from server.exercises.settings import PoolSettings
from server.valkey.client import stop_tasks

log = logging.getLogger(__name__)

RESTART_TRIES = 3
COOL_OFF = 30.0  # seconds after every grader went down before the next run has them tried again
EVERY_GRADER_DOWN = "No grader could be started again; the site's operator has been told in its log."
PlaceHook = Callable[[int], None]


class Ticket:
    """One run's claim on a grader: a place in the line, then the grader."""

    def __init__(self, run_for: str, on_place: PlaceHook | None, address: str | None = None) -> None:
        self.run_for = run_for
        self.address = address
        self.place = 0
        self._on_place = on_place
        self.granted: asyncio.Future[Grader] = asyncio.get_running_loop().create_future()

    def move(self, place: int) -> None:
        if place == self.place and place != 0:
            return
        self.place = place
        if self._on_place is not None:
            try:
                self._on_place(place)
            except Exception:  # a listener's fault must not stall the line for every run
                log.exception("a place listener failed; the run goes on")


@dataclass(frozen=True)
class PoolStatus:
    graders: int
    free: int
    restarting: int
    down: int
    waiting: int


class GraderPool:
    """``settings.graders`` grading processes serving a bounded line of runs."""

    def __init__(self, settings: PoolSettings | None = None) -> None:
        self.settings = s = settings or PoolSettings()
        self.graders = [Grader(i, s.process, s.limits) for i in range(s.graders)]
        for grader in self.graders:
            grader.on_lost = self._lost
        self.shares = SandboxShares(s.sandbox_in_flight, s.sandbox_burst, s.sandbox_per_minute)
        self._free: list[Grader] = []
        self._waiting: FairLine[Ticket] = FairLine(s.queue_bound, s.address_runs)
        self._restarting: set[Grader] = set()
        self._down: set[Grader] = set()
        self._down_at = 0.0  # when the last grader went down
        self._tasks: set[asyncio.Task[None]] = set()
        self._started = False
        self._lock = asyncio.Lock()

    # --- life ---------------------------------------------------------------

    async def start(self) -> None:
        """Start every grader (once; later calls return at once)."""
        async with self._lock:
            if self._started:
                return
            try:
                await asyncio.gather(*(grader.start() for grader in self.graders))
            except BaseException:
                await asyncio.gather(*(grader.stop() for grader in self.graders), return_exceptions=True)
                raise
            self._free.extend(self.graders)
            self._started = True

    async def stop(self) -> None:
        """Refuse the waiting runs, stop the restarts, end every grader process."""
        self._started = False
        await stop_tasks(self._tasks)  # copied before the first await: done tasks leave the set
        self._fail_waiting("The graders are stopping; run the checks again once the site is back.")
        await asyncio.gather(*(grader.stop() for grader in self.graders), return_exceptions=True)
        self._free.clear()
        self._restarting.clear()
        self._down.clear()

    async def __aenter__(self) -> GraderPool:
        await self.start()
        return self

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        trace: TracebackType | None) -> None:
        await self.stop()

    def status(self) -> PoolStatus:
        return PoolStatus(graders=len(self.graders), free=len(self._free), restarting=len(self._restarting),
                          down=len(self._down), waiting=len(self._waiting))

    # --- the line -----------------------------------------------------------

    def submit(self, run_for: str, on_place: PlaceHook | None = None, address: str | None = None) -> Ticket:
        """Admit a run of sandbox ``run_for`` from client ``address`` (None: no share of places)."""
        if not self._started:
            raise Restarting("The graders are not running yet; run the checks again in a moment.")
        if len(self._down) >= len(self.graders):
            if time.monotonic() - self._down_at < COOL_OFF:
                raise Restarting(EVERY_GRADER_DOWN)
            # a cause outside the site (memory, a full disk) may have passed: this run waits for another try
            log.warning("every grader was down for %s s: starting them again", COOL_OFF)
            for grader in self._down:
                self._restart(grader)
            self._down.clear()
        self._waiting.admit(address)
        try:
            self.shares.admit(run_for)
        except TooOften:
            self._waiting.release(address)
            raise
        ticket = Ticket(run_for, on_place, address)
        idle = None if self._waiting else self._free_grader()
        if idle is not None:
            ticket.move(0)
            ticket.granted.set_result(idle)
        elif self._waiting.full():
            self.shares.done(run_for, refund=True)
            self._waiting.release(address)
            raise QueueFull(f"All {self.settings.queue_bound} places in the line for a grader are taken; "
                            "run the checks again in a few seconds.")
        else:
            self._waiting.push(address, ticket)
            self._renumber()
        return ticket

    async def wait(self, ticket: Ticket) -> Grader:
        """``ticket``'s grader, once its turn comes; a caller that stops waiting leaves the line."""
        try:
            return await ticket.granted
        except BaseException:
            self.give_back(ticket)
            raise

    def give_back(self, ticket: Ticket, grader: Grader | None = None) -> None:
        """The run is over, or stopped waiting (no ``grader``): out of the line, and the grader it
        holds (if any) goes to the next in line, or to a restart."""
        self.shares.done(ticket.run_for)
        self._waiting.release(ticket.address)
        if self._waiting.remove(ticket):
            self._renumber()
        granted = ticket.granted
        if grader is None and granted.done() and not granted.cancelled() and granted.exception() is None:
            grader = granted.result()
        if grader is not None and grader.alive():
            self._hand(grader)
        elif grader is not None:
            self._restart(grader)

    @asynccontextmanager
    async def serve(self, ticket: Ticket) -> AsyncIterator[Grader]:
        """``wait`` for the grader, hold it for the block, ``give_back`` after."""
        grader = await self.wait(ticket)
        try:
            yield grader
        finally:
            self.give_back(ticket, grader)

    @asynccontextmanager
    async def turn(self, run_for: str, on_place: PlaceHook | None = None) -> AsyncIterator[Grader]:
        """``submit`` and ``serve`` in one: a grader for one run of ``run_for``."""
        async with self.serve(self.submit(run_for, on_place)) as grader:
            yield grader

    def _lost(self, grader: Grader) -> None:
        """A grader's process ended on its own: if idle, start it again now (one in a run is given back by the run)."""
        if grader in self._free:
            self._free.remove(grader)
            self._restart(grader)

    def _free_grader(self) -> Grader | None:
        """An idle grader that is alive; a dead one found here goes to a restart."""
        while self._free:
            grader = self._free.pop(0)
            if grader.alive():
                return grader
            self._restart(grader)
        return None

    def _hand(self, grader: Grader) -> None:
        if not self._started:
            return
        while (ticket := self._waiting.pop()) is not None:
            if ticket.granted.done():
                continue  # cancelled while it waited
            ticket.move(0)
            ticket.granted.set_result(grader)
            self._renumber()
            return
        self._free.append(grader)

    def _renumber(self) -> None:
        for place, ticket in enumerate(self._waiting, 1):
            ticket.move(place)

    def _fail_waiting(self, why: str) -> None:
        for ticket in self._waiting.clear():
            if not ticket.granted.done():
                ticket.granted.set_exception(Restarting(why))

    # --- restarts -----------------------------------------------------------

    def _restart(self, grader: Grader) -> None:
        if not self._started:
            return  # stopping: the grader's process is ended by stop(), not started again
        self._restarting.add(grader)
        task = asyncio.get_running_loop().create_task(self._restart_loop(grader))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _restart_loop(self, grader: Grader) -> None:
        for attempt in range(1, RESTART_TRIES + 1):
            try:
                await grader.restart()
            except (RuntimeError, RedisError, OSError) as exc:
                log.warning("grader %s did not start again (try %s): %s", grader.index, attempt, exc)
                await asyncio.sleep(0.2 * attempt)
                continue
            self._restarting.discard(grader)
            self._hand(grader)
            return
        self._restarting.discard(grader)
        self._down.add(grader)
        if len(self._down) >= len(self.graders):
            self._down_at = time.monotonic()
            self._fail_waiting(EVERY_GRADER_DOWN)
            log.error("every grader is down: exercises answer 503 for %s s, then a run tries them again", COOL_OFF)
