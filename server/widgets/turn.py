"""One action's turn on a widget: its lock, what it read, and what it writes last.

One lock per widget and sandbox (`SET NX PX`, with a lease) queues tabs, class
members and Reset, so any interleaving of clicks reaches a state clicking one
at a time reaches. Taking it rides with the read (`read.lua`); the finish
(`finish.lua`) records the outcome and lets go, in one more round trip. A lock
key no lock wrote (`StrayLock`) is said at once, not waited for; a Reset removes it.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any

from server.emq import jobs
from server.emq.script import Call, Script, raise_first
from server.emq.wire import Conn
from server.refusal import Refusal
from server.sandboxes import keys
from server.sandboxes.sandbox import queue_name
from server.valkey.reply import wrong_type
from server.widgets.reader import SNAPSHOT_BYTES, Command, moment_of, pipelined, queues_of, read_calls
from server.widgets.view import Moment

if TYPE_CHECKING:
    from server.widgets.base import Widget

SCRIPTS = Path(__file__).resolve().parent / "scripts"
CLEAR = Script.from_file(SCRIPTS / "clear.lua")
FINISH = Script.from_file(SCRIPTS / "finish.lua")
RELEASE = Script.from_file(SCRIPTS / "release.lua")
UNSTRAY = Script.from_file(SCRIPTS / "unstray.lua")

LOCK_LEASE_MS = 10_000  # an action that outlives this (a site killed mid-action) lets go
LOCK_WAIT_S = 5.0  # how long an action queues behind another before it gives up


class Busy(Refusal):
    """Another action of this widget held the lock for too long (answered 503, retried in a second)."""

    status, retry_after = 503, 1


class StrayLock(Exception):
    """The widget's lock key holds what no lock writes: another type, or a string without a lease (an
    operator's command or a fault). Waiting would never end; the web layer says it as the wrong-type
    fault it is (`errors.refusal_of`), and a Reset removes the key (`unstray.lua`)."""


@dataclass(frozen=True)
class Actor:
    """Who acts, where: the sandbox the keys are in, whose record the action moves, who it was."""

    sandbox: str
    visitor: str
    by: str = "learner"  # or "instructor"
    name: str = ""  # a class member's display name
    tab: str = ""  # the page that acted
    room: str | None = None
    # the question the class was asked, as (widget, question, step, round): its answers count in that round
    ask: tuple[str, str, int, int] | None = None
    # the asked question's verdict is kept from the learner until Reveal (own sandboxes)
    veiled: bool = False
    mode: str = "own"  # the class's mode when the answer was given: answers of each mode are kept apart
    # False on the learner's behalf (an instructor's reset): their record and activity stay as they were
    records: bool = True


def unstray_call(widget: Widget, sandbox: str) -> Call:
    """`unstray.lua` on the widget's lock: a key no lock wrote goes, a held lock stays."""
    return (UNSTRAY, [keys.lock_key(queue_name(sandbox, widget.queue_parts[0]))], [])


def clear_call(widget: Widget, sandbox: str, part: str, kept: Sequence[str] = ()) -> Call:
    """`clear.lua` over one queue of the widget: every key goes, and the lab state but its fields `kept`."""
    q = queue_name(sandbox, part)
    return (CLEAR, [keys.state_key(q), keys.index_key(q), keys.spent_key(q)],
            [f"emq:{{{q}}}:", json.dumps(list(kept)), *widget.job_ids(part)])


class Turn:
    def __init__(self, conn: Conn, widget: Widget, actor: Actor, budget: int = SNAPSHOT_BYTES) -> None:
        self.conn, self.widget, self.budget, self.sandbox = conn, widget, budget, actor.sandbox
        self.queues = queues_of(widget, actor.sandbox)
        self.first = self.queues[widget.queue_parts[0]]
        self.token = secrets.token_hex(8)
        self.moment = Moment({}, {})
        self.kept: dict[str, str] = {}  # lab state fields written with the finish
        self.after: list[Command] = []  # best-effort writes riding the finish (a :logs DEL)
        self.lease_seen = False  # the holder's lock had a lease: a real lock keeps it, so asked once

    def queue(self, part: str | None = None) -> str:
        return self.first if part is None else self.queues[part]

    async def take(self, *, stray_goes: bool = False) -> Moment:
        """Take the lock (waiting behind another action) and read what the action starts from.
        `stray_goes` (a Reset): a stray lock key is removed and the lock taken, not refused."""
        deadline = asyncio.get_running_loop().time() + LOCK_WAIT_S
        while (found := await self.try_take(stray_goes=stray_goes)) is None:
            if asyncio.get_running_loop().time() > deadline:
                raise Busy("another action on this widget is still running; try again in a moment")
            await asyncio.sleep(0.005)
        return found

    async def try_take(self, *, stray_goes: bool = False) -> Moment | None:
        """One try at the lock, with the read in the same round trip; None when another holds it.
        A stray lock key raises `StrayLock`, or with `stray_goes` is removed (None: try again)."""
        name = keys.lock_key(self.first)
        # GET: a key of another type answers WRONGTYPE instead of "held". Only None (taken: nothing was
        # there) counts: redis-py turns the holder's token into a bool.
        lock = ("SET", name, self.token, "NX", "PX", LOCK_LEASE_MS, "GET")
        replies = await pipelined(self.conn, [lock, *read_calls(self.widget, self.sandbox, self.budget)])
        held = replies[0]
        if isinstance(held, Exception) and not wrong_type(held):
            raise held  # the lock itself refused (out of memory): said at once, not as Busy
        # A lock always has a lease: a string without one is stray too. Asked only when the key is
        # there, and once per turn, so neither the action's round trip nor a wait's polls carry it.
        if held is not None and not wrong_type(held) and not self.lease_seen:
            self.lease_seen = await self.conn.pttl(name) != -1
            stray = not self.lease_seen
        else:
            stray = wrong_type(held)
        if stray:
            if not stray_goes:
                raise StrayLock(f"{name} holds what no lock writes")
            await UNSTRAY.run(self.conn, [name], [])  # removes only a stray key, never a held lock
            return None
        if held is not None:
            return None
        try:
            self.moment = moment_of(self.conn, self.widget, self.sandbox, raise_first(replies[1:]))
        except BaseException:
            await self.release()
            raise
        return self.moment

    async def read(self) -> Moment:
        """Read again (after the action's writes: a verdict, a replay's next step); what
        waits for the finish is written first, in the same round trip."""
        pending = self.pending()
        replies = await pipelined(self.conn, [*pending, *read_calls(self.widget, self.sandbox, self.budget)])
        self.kept, self.after = {}, []  # best effort, as in flush: their errors stay unraised
        self.moment = moment_of(self.conn, self.widget, self.sandbox, raise_first(replies[len(pending):]))
        return self.moment

    async def lineage(self, part: str | None, job_id: str) -> jobs.Lineage:
        """The job's lineage from its row as last read, else asked of Valkey."""
        queue = self.queue(part)
        found = jobs.lineage_of_row(queue, self.moment.view(part).fields(job_id))
        return found or await jobs.lineage(self.conn, queue, job_id)

    async def claim(self, part: str | None = None) -> tuple[str, int, jobs.Lineage] | None:
        """Claim the head of the part's pending: (job_id, token, its lineage from the row as last read)."""
        got = await jobs.claim(self.conn, self.queue(part))
        return None if got is None else (*got, await self.lineage(part, got[0]))

    def remember(self, **fields: Any) -> None:
        """Keep lab state fields (text as it is, anything else as JSON), written with the finish."""
        self.kept.update({k: v if isinstance(v, str) else json.dumps(v) for k, v in fields.items()})

    def pending(self) -> list[Command]:
        """What waits for the finish: the kept lab state fields, then the `after` writes."""
        state: list[Command] = [("HSET", keys.state_key(self.first), *chain(*self.kept.items()))] if self.kept else []
        return [*state, *self.after]

    async def flush(self) -> None:
        """Write now what waits for the finish (a replay's step before the next one reads)."""
        if pending := self.pending():
            await pipelined(self.conn, pending)  # best effort: errors come back, unraised
        self.kept, self.after = {}, []

    async def clear(self, *, keep_choices: bool = True) -> None:
        """Remove every key of the widget's queues, whatever their types (Reset).
        `ver` stays (a page paints nothing older than it has seen), and the
        learner's choices unless `keep_choices` is False; `landed` goes until
        the finish writes it again, so no page reads a half-landed scenario."""
        kept = ["ver", *(self.widget.kept_on_reset if keep_choices else ())]
        raise_first(await pipelined(self.conn, [clear_call(self.widget, self.sandbox, p, kept) for p in self.queues]))
        self.kept, self.after = {}, []

    async def finish(self, outcome: str, records: Sequence[Call | Command] = ()) -> tuple[str, list[Any]]:
        """Record the outcome and let go, in one round trip with `records` (scripts
        or commands); the new `ver` and the replies of `records`, errors returned."""
        fields = json.dumps(self.kept) if self.kept else ""
        finish: Call = (FINISH, [keys.state_key(self.first), keys.lock_key(self.first)], [self.token, outcome, fields])
        # `after` goes first: its writes land while the lock is held, so the pages get one batch, not two
        replies = await pipelined(self.conn, [*self.after, finish, *records])
        done = replies[len(self.after)]
        if isinstance(done, Exception):
            await self.release()
            raise done
        mine = replies[len(self.after) + 1:]
        self.kept, self.after = {}, []
        return str(done), mine

    async def dumps(self, names: Sequence[str]) -> dict[str, str]:
        """Each existing key's DUMP (hex) and PTTL: its bytes, compared across an action."""
        if not names:
            return {}
        # The names share the queue's hashtag (one slot): one pipelined round trip.
        async with self.conn.pipeline(transaction=False) as pipe:
            for name in names:
                pipe.dump(name)
                pipe.pttl(name)
            replies = await pipe.execute()
        found = {}
        for name, dumped, ttl in zip(names, replies[::2], replies[1::2], strict=True):
            if dumped is not None:
                raw = dumped if isinstance(dumped, bytes) else str(dumped).encode("utf-8", "surrogateescape")
                found[name] = f"{raw.hex()}/{ttl}"
        return found

    async def release(self) -> None:
        """Let go without recording anything (an action that failed)."""
        await RELEASE.run(self.conn, [keys.lock_key(self.first)], [self.token])
