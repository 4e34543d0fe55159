"""The console's one entry point: `run_line(console, line) -> ConsoleReply`, which never raises
for a line or a fault of Valkey's. A write runs under its queue's lock, checked against the byte
budget before, weighed after, and names the queue it touched for a repaint.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict

from redis.asyncio.lock import Lock
from redis.exceptions import LockError, OutOfMemoryError, RedisError

from server.console import budget, run
from server.console.allow import Reason, Refusal
from server.console.as_user import PASSING, Closed, Runner
from server.console.confine import Confinement
from server.console.parse import Limits, Malformed
from server.console.plan import Plan, plan
from server.emq.wire import Conn
from server.sandboxes import admission
from server.sandboxes.keys import REGISTRY_KEY, lock_key
from server.valkey.client import is_busy

log = logging.getLogger("emqlab.console")

FULL = ("Valkey is at its memory limit right now: nothing was written. A Reset still works there and frees "
        "memory: press Reset on a widget, then run the line again.")
BUSY = "A widget of this queue is busy right now: nothing was written. Run the line again in a moment."
FAULT = "Valkey could not take the line just now; run it again in a moment."
STRAY = ("The lock of this queue's widget holds what no lock writes (an operator's command or a fault put it "
         "there), so no write could ever take it: nothing was written. Press Reset on the widget: it removes "
         "the stray key. Then run the line again.")
HELD = ("Valkey is busy with a long-running script right now (the site stops a learner's script past its "
        "budget): the line did not run. Run it again in a moment.")
NAME = "console"  # the {widget} name that places the console on a dive
_TRY = re.compile(r"try-(\d+)")


def page_context(options: dict[str, Any]) -> dict[str, Any]:
    """The console's partial: the dive's example commands, its `try-N` options (`try-1: HGETALL …`)."""
    found = sorted((int(m[1]), str(v)) for k, v in options.items() if (m := _TRY.fullmatch(k)))
    return {"examples": [command for _, command in found]}


class QueueLock(Lock):
    """redis-py's `Lock`, tried once before it waits: a key no lock writes (another type, or a string
    without a lease: an operator's command or a fault) would never let go, so it is said at once."""

    async def __aenter__(self) -> QueueLock:
        if not await self.acquire(blocking=False):
            kind = await self.redis.type(self.name)
            if kind not in ("none", "string") or (kind == "string" and await self.redis.pttl(self.name) == -1):
                raise Refusal(409, STRAY, "busy")
            if not await self.acquire():  # a held lock is waited for, at most `blocking_timeout`
                raise LockError("the lock was not let go in time")
        return self


def queue_lock(admin: Conn, sandbox: str, hold: float = 10.0, wait: float = 5.0
               ) -> Callable[[str], AbstractAsyncContextManager[Any]]:
    """`lock(queue)`: a queue's action lock, the widgets' key and protocol (SET NX PX of a token,
    compare-and-delete) through redis-py's `Lock`, so the two exclude each other; held at most
    `hold` s, waited for at most `wait` (then LockError: busy), a stray key refused at once."""

    def lock(queue: str) -> AbstractAsyncContextManager[Any]:
        # Not thread-local: every task shares the one thread. A release past expiry does not raise.
        return admin.lock(lock_key(f"{sandbox}.{queue}"), timeout=hold, blocking_timeout=wait, sleep=0.02,
                          lock_class=QueueLock, thread_local=False, raise_on_release_error=False)

    return lock


@dataclass(frozen=True)
class ConsoleContext:
    admin: Conn  # the site's connection: SCAN/KEYS, the budget and index keys
    runner: Runner  # runs a line as the sandbox's ACL user
    sandbox: str  # s + 10 of [a-z0-9]
    queues: frozenset[str]  # the queues a line may write: "fanin", "outbox.orders", ...
    lock: Callable[[str], AbstractAsyncContextManager[Any]]  # held around a write, given the queue
    budget: int = budget.DEFAULT_BUDGET  # bytes of keys the sandbox's console writes may add
    limits: Limits = field(default_factory=Limits)  # the line's size caps
    read_only: str | None = None  # when set, a write is refused (403) with this sentence: demo mode
    door: admission.Door | None = None  # the site's admission, passed before any line runs (None: a test's)
    ids: Mapping[str, Sequence[str]] = field(default_factory=dict)  # queue -> the rows its widget lands (KEYS)


class ReplyJSON(TypedDict, total=False):  # what the page reads and the transcript keeps
    command: str
    reply_lines: list[str]
    kind: Literal["reply", "error", "refused"]
    error: str


@dataclass(frozen=True)
class ConsoleReply:
    command: str
    lines: tuple[str, ...]  # as valkey-cli prints the reply (server/valkey/reply.py)
    kind: Literal["reply", "error", "refused"]  # error: Valkey answered an error reply
    wrote: bool = False  # a write line ran (whatever Valkey answered)
    touched: tuple[str, ...] = ()  # the queues it wrote: the widgets to repaint
    refused: Refusal | None = None  # its status, reason and message

    @property
    def status(self) -> int:
        return self.refused.status if self.refused is not None else 200

    def body(self) -> ReplyJSON:
        found: ReplyJSON = {"command": self.command, "reply_lines": list(self.lines), "kind": self.kind}
        if self.refused is not None:
            found["error"] = self.refused.message
        return found


def refusal(command: str, status: int, reason: Reason, message: str, lines: list[str] | None = None) -> ConsoleReply:
    return ConsoleReply(command, tuple(lines or [f"(refused) {message}"]), "refused",
                        refused=Refusal(status, message, reason))


async def run_line(console: ConsoleContext, line: str) -> ConsoleReply:
    try:
        where = Confinement(console.sandbox, console.queues)
        found = plan(line, where, console.limits)
        if found.queue is None:
            # A reader is admitted (and so reaped) too; over maxmemory the registry refuses the
            # write, yet a sandbox already registered may still read.
            try:
                if console.door is not None:
                    await console.door.enter(console.admin, console.sandbox, used=False)
            except OutOfMemoryError:
                if await console.admin.zscore(REGISTRY_KEY, console.sandbox) is None:
                    raise
            return answered(found, await run.execute(console.runner, console.admin, console.sandbox, found, where,
                                                     console.ids))
        if console.read_only is not None:
            raise Refusal(403, console.read_only, "read-only")
        async with console.lock(found.queue):
            await budget.admit(console.admin, console.sandbox, console.queues, found, console.budget, console.door)
            value = await run.execute(console.runner, console.admin, console.sandbox, found, where)
            try:
                await budget.weigh(console.admin, console.sandbox, found)
            except (RedisError, OSError) as exc:  # the line ran: its reply stands
                log.warning("console write in %s ran but was not weighed: %s", console.sandbox, exc)
        return answered(found, value, wrote=True)
    except admission.Full as exc:
        status = 429 if isinstance(exc, admission.AddressFull) else 503
        return refusal(line, status, "unavailable", str(exc))
    except Malformed as exc:
        return refusal(line, 400, "bad-line", str(exc))
    except Refusal as exc:
        return refusal(line, exc.status, exc.reason, str(exc))
    except Closed as exc:
        return refusal(line, 503, "closed", f"The console is closed here: {exc}.")
    except LockError:
        return refusal(line, 503, "busy", BUSY)
    except OutOfMemoryError:  # the lock or the budget's count, refused before the line ran
        return refusal(line, 503, "unavailable", FULL)
    except (RedisError, TimeoutError, OSError) as exc:  # a fault of Valkey's, not of the line
        log.warning("console line in %s not run: %s", console.sandbox, exc)
        return refusal(line, 503, "unavailable", HELD if is_busy(exc) else FAULT)


def answered(found: Plan, value: Any, wrote: bool = False) -> ConsoleReply:
    lines = run.printed(found, value)
    if isinstance(value, OutOfMemoryError):
        return refusal(found.command, 503, "unavailable", FULL, lines)
    if isinstance(value, PASSING):  # loading its data, or a cluster between two slot maps
        return refusal(found.command, 503, "unavailable", FAULT, lines)
    if is_busy(value):  # another script holds Valkey: this line did not run
        return refusal(found.command, 503, "unavailable", HELD, lines)
    kind: Literal["reply", "error"] = "error" if isinstance(value, Exception) else "reply"
    return ConsoleReply(found.command, tuple(lines), kind, wrote=wrote,
                        touched=(found.queue,) if wrote and found.queue is not None else ())
