"""A queue's action lock, for a caller that has none of its own.

A console write holds the lock of the queue it writes, so it never
interleaves with a widget's action on that queue. The web layer passes the
widgets' own lock (`ConsoleContext.lock`); this one takes the same key with
the same protocol — `lab:{<sandbox>.<queue>}:lock`, SET NX PX with a random
token, released only by its holder (compare-and-delete) — through redis-py's
public `Lock`, so the two exclude each other.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

from server.emq.wire import Conn


def lock_key(sandbox: str, queue: str) -> str:
    return f"lab:{{{sandbox}.{queue}}}:lock"


def queue_lock(admin: Conn, sandbox: str, hold: float = 10.0, wait: float = 5.0
               ) -> Callable[[str], AbstractAsyncContextManager[Any]]:
    """`lock(queue)` for `ConsoleContext`: held at most `hold` seconds (a
    crashed holder cannot keep it), waited for at most `wait` (then redis-py's
    LockError, which the console answers as busy)."""

    def lock(queue: str) -> AbstractAsyncContextManager[Any]:
        # A lock object per write, its token its own (not thread-local: every
        # task shares the one thread). A release that finds the lock expired
        # does not raise: the write already ran and its reply is the answer.
        return admin.lock(lock_key(sandbox, queue), timeout=hold, blocking_timeout=wait, sleep=0.02,
                          thread_local=False, raise_on_release_error=False)

    return lock
