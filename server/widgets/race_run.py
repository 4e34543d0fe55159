"""One race: real workers, each on its own Valkey connection, on the race widget's flow.

Workers claim and complete through the course's scripts, timing and faults drawn
from the seed. Each call goes in a MULTI with an INCR of the run's counter, so the
timeline (written into the lab state, where every page reads it) is Valkey's order.
A run in `Turns` (the recorded one) is the same run wherever and whenever it is played.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import msgspec
from redis.asyncio import Redis
from redis.exceptions import ConnectionError as Disconnected

from server.emq import keyspace, registry
from server.emq.script import Script
from server.emq.wire import Conn, text
from server.widgets.race_workers import Turns, own_connection, worker_name

log = logging.getLogger("emqlab.race")

PARENT = "JOBrace"
LEASE_MS = 250  # short, so a lapse comes within the run
CAP_S = 5.0  # no run outlives this
ENTRIES = 120  # the timeline's cap: a snapshot stays small
# the second exercise's starter, the same file (server/emq/scripts/variants/): what the learner fixes there breaks here
EARLY = Script("complete_early_release", registry.variant_source("complete_early_release", "complete"))


class End(StrEnum):
    """How a run ended, in the words its timeline shows."""

    RELEASE = "the parent's release"
    FAILURE = "the parent's failure"
    DRAINED = "nothing left to claim"
    # cut from outside: Valkey dropped its workers, or the load outran the cap
    LOST = "a lost connection"
    CAPPED = "the time cap"

    @property
    def cut(self) -> bool:
        return self in (End.LOST, End.CAPPED)


def child_ids(n: int) -> list[str]:
    return [f"JOBc{i:02d}" for i in range(1, n + 1)]


class Plan(msgspec.Struct, frozen=True):
    """A run's choices, as Run takes them and the run's marker keeps them (the picture draws them)."""

    workers: int = 3
    children: int = 6
    faults: tuple[str, ...] = ("crash", "lapse", "twice")
    early_release: bool = False
    seed: int = 7

    def faults_by_worker(self) -> dict[int, dict[int, str]]:
        """worker -> {its k-th claim: the fault it meets there}, drawn from the seed."""
        rng = random.Random(f"faults:{self.seed}")
        found: dict[int, dict[int, str]] = {w: {} for w in range(1, self.workers + 1)}
        # a crash stops its worker for good: never every worker, so the others finish the flow
        crashers = rng.sample(range(1, self.workers + 1), k=1) if "crash" in self.faults else []
        for w in crashers:
            found[w][rng.randint(1, 2)] = "crash"
        for fault in ("lapse", "twice"):
            if fault in self.faults:
                for _ in range(rng.randint(1, 2)):
                    w = rng.choice([w for w in found if w not in crashers])
                    found[w].setdefault(rng.randint(1, 3), fault)
        return found


@dataclass
class Worker:
    number: int
    conn: Redis
    client: int  # its CLIENT ID: a Reset fences the run by killing it (`fence`)
    rng: random.Random
    faults: dict[int, str]
    claims: int = 0


@dataclass
class Race:
    conn: Conn
    queue: str
    state_key: str
    plan: Plan
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    ended: End | None = None
    stalled: int = 0
    workers: list[Worker] = field(default_factory=list)
    turns: Turns | None = None  # the workers take turns in the seed's time (the recorded run)

    def key(self, suffix: str) -> str:
        return keyspace.queue_key(self.queue, suffix)

    def finish(self, why: End) -> None:
        if self.ended is None:
            self.ended = why
        self.stop.set()

    async def connect(self) -> list[int]:
        """Open each worker's connection (CLIENT LIST shows every worker from the start); their
        CLIENT IDs, which the run's marker keeps for a Reset to fence them by."""
        faults = self.plan.faults_by_worker()
        try:
            for n in range(1, self.plan.workers + 1):
                conn = own_connection(self.conn, self.state_key, worker_name(n, self.queue))
                client = int(await conn.client_id())
                self.workers.append(Worker(n, conn, client, random.Random(f"{self.plan.seed}:{n}"), faults[n]))
        except BaseException:
            await self.close()
            raise
        return [w.client for w in self.workers]

    async def close(self) -> None:
        # shielded: a Reset cancels the run, and a close cut short by that cancel would leave
        # the workers' connections open (CLIENT LIST would still show them)
        closing = asyncio.gather(*(w.conn.aclose() for w in self.workers), return_exceptions=True)
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(closing)

    async def run(self) -> End:
        """Race the workers (connected first, unless `connect` was called), wait for the end; why it ended."""
        if not self.workers:
            await self.connect()
        try:
            try:
                for script in (registry.script("claim"), self.complete_script, registry.script("requeue_lapsed")):
                    await self.workers[0].conn.script_load(script.source)
            except Disconnected:  # fenced before a worker started: a Reset took the lock as the Run let it go
                self.finish(End.LOST)
                return End.LOST
            tasks = [asyncio.create_task(self.work(w)) for w in self.workers]
            try:
                await asyncio.wait_for(self.stop.wait(), CAP_S)
            except TimeoutError:
                self.finish(End.CAPPED)
            except asyncio.CancelledError:
                # a Reset cancels the run; a call already on the wire is stopped by its `fence`
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                raise
            self.stop.set()
            await asyncio.gather(*tasks, return_exceptions=True)  # each ends its call in flight
        finally:
            await self.close()
        assert self.ended is not None  # the wait ends by `finish` or at the cap
        return self.ended

    @property
    def complete_script(self) -> Script:
        return EARLY if self.plan.early_release else registry.script("complete")

    async def op(self, w: Worker, op: str, job: str, script: Script | None, keys: list[str],
                 args: list[Any], counts: bool = False) -> Any:
        """One call in a MULTI with the run's counter (and, for a completion, the counter around it)."""
        deps = keyspace.dependencies_key(self.queue, PARENT)
        async with w.conn.pipeline(transaction=True) as pipe:
            if counts:
                pipe.get(deps)
            if script is not None:
                pipe.execute_command("EVALSHA", script.sha, len(keys), *keys, *args)
            if counts:
                pipe.get(deps)
                pipe.hget(keyspace.job_key(self.queue, PARENT), "state")
            pipe.hincrby(self.state_key, "race:n", 1)
            replies = await pipe.execute(raise_on_error=False)
        reply = replies[1 if counts else 0] if script is not None else None
        said = _said(op, reply, replies if counts else None)
        if op == "claim" and isinstance(reply, list):
            job = text(reply[0]) or ""
        # an empty claim or sweep is a poll, not an event: the timeline leaves it out
        if script is None or op not in ("claim", "requeue_lapsed") or reply:
            seq = int(replies[-1])
            if seq <= ENTRIES:
                entry = {"worker": f"w{w.number}", "op": op, "job": job, "reply": said}
                await w.conn.hset(self.state_key, f"race:t:{seq:04d}", json.dumps(entry))
        if counts and text(replies[-2]) not in ("awaiting_children", None):
            self.finish(End.RELEASE if text(replies[-2]) == "pending" else End.FAILURE)
        return reply

    async def pause(self, w: Worker, seconds: float) -> None:
        await (self.turns.pause(w.number, seconds) if self.turns else asyncio.sleep(seconds))

    def lease_ms(self, w: Worker) -> int:
        """A lease runs on the server's clock, not the seed's: in turns, a claim the seed dooms (its
        worker crashes or stalls) has lapsed at once, and any other outlives the run."""
        doomed = w.faults.get(w.claims + 1) in ("crash", "lapse")
        return LEASE_MS if self.turns is None else 0 if doomed else int(CAP_S * 1000)

    async def work(self, w: Worker) -> None:
        try:
            await self.pause(w, 0)  # in turns, the first move waits for the worker's turn
            await self.loop(w)
        except Disconnected:  # fenced by a Reset (perhaps another site process's): the run is over
            log.info("race worker w%d of %s lost its connection", w.number, self.queue)
            self.finish(End.LOST)
        except Exception:  # a worker that breaks stops; the run reads what it left
            log.exception("race worker w%d of %s stopped", w.number, self.queue)
        finally:
            if self.turns:
                self.turns.stopped()

    async def loop(self, w: Worker) -> None:
        while not self.stop.is_set():
            got = await self.op(w, "claim", "", registry.script("claim"),
                                [self.key("pending"), self.key("active")],
                                [keyspace.base(self.queue), self.lease_ms(w)])
            if not got:
                await self.idle(w)
                continue
            job, token = text(got[0]) or "", int(got[1])
            if job == PARENT:
                self.finish(End.RELEASE)
                return
            w.claims += 1
            fault = w.faults.get(w.claims)
            if fault == "crash":
                await self.op(w, "crash", job, None, [], [])
                await w.conn.aclose()
                return
            await self.pause(w, w.rng.uniform(0.002, 0.02))  # the work
            if fault == "lapse":
                await self.stall(w, job, token)
                continue
            await self.complete(w, job, token, "complete")
            if fault == "twice":
                await self.complete(w, job, token, "complete again")

    async def complete(self, w: Worker, job: str, token: int, op: str) -> None:
        keys = [self.key("active"), keyspace.job_key(self.queue, job),
                keyspace.dependencies_key(self.queue, PARENT), keyspace.processed_key(self.queue, PARENT),
                keyspace.job_key(self.queue, PARENT)]
        args = [job, str(token), keyspace.base(self.queue), PARENT, f"done by w{w.number}"]
        await self.op(w, op, job, self.complete_script, keys, args, counts=True)

    async def stall(self, w: Worker, job: str, token: int) -> None:
        """The worker stalls past its lease; it wakes either right after `requeue_lapsed`
        handed the child back (before anyone claimed it again) or once it was claimed
        again: the seed says which."""
        self.stalled += 1
        try:
            await self.pause(w, LEASE_MS / 1000 + 0.005)
            if w.rng.random() < 0.3:
                await self.requeue(w)
            else:
                row = keyspace.job_key(self.queue, job)
                # polled on the worker's own connection, as a stalled process would find out
                while not self.stop.is_set() and int(await w.conn.hget(row, "attempts") or token) <= token:
                    await self.pause(w, 0.01)
            await self.complete(w, job, token, "late complete")
        finally:
            self.stalled -= 1

    async def requeue(self, w: Worker) -> Any:
        return await self.op(w, "requeue_lapsed", "", registry.script("requeue_lapsed"),
                             [self.key("active"), self.key("pending")], [keyspace.base(self.queue), 100])

    async def idle(self, w: Worker) -> None:
        """Nothing to claim: sweep for lapsed leases now and then; end when nothing is left."""
        await self.pause(w, w.rng.uniform(0.08, 0.16))
        if self.stop.is_set():
            return
        await self.requeue(w)
        left = await w.conn.zcard(self.key("pending")) + await w.conn.zcard(self.key("active"))
        if left == 0 and self.stalled == 0:
            self.finish(End.DRAINED)


def _said(op: str, reply: Any, around: list[Any] | None) -> str:
    """A reply as the timeline shows it, in the scripts' words."""
    if op == "crash":
        return "the worker crashed: its connection closed, the claim left in active"
    if isinstance(reply, Exception):
        return str(reply).split(" Script:")[0]
    if op == "claim":
        return f"{text(reply[0])}, token {int(reply[1])}" if reply else "nothing to claim"
    if op == "requeue_lapsed":
        return "nothing lapsed" if not reply else "put back in pending: " + ", ".join(text(r) or "" for r in reply)
    if around is not None:
        before, after = text(around[0]), text(around[2])
        if int(reply) == 0:
            return "0: the row is gone, nothing counted"
        if before != after:
            return f"1: counted, :dependencies {before} → {after}"
        return "1: the row retired, counted nothing"
    return str(reply)
