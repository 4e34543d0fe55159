"""A queue's action lock: the widgets' key and protocol (SET NX PX of a token, compare-and-delete),
through redis-py's `Lock`, so the two exclude each other."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

from server.emq.wire import Conn
from server.sandboxes.keys import lock_key


def queue_lock(admin: Conn, sandbox: str, hold: float = 10.0, wait: float = 5.0
               ) -> Callable[[str], AbstractAsyncContextManager[Any]]:
    """`lock(queue)`: held at most `hold` s, waited for at most `wait` (then LockError: busy)."""

    def lock(queue: str) -> AbstractAsyncContextManager[Any]:
        # Not thread-local: every task shares the one thread. A release past expiry does not raise.
        return admin.lock(lock_key(f"{sandbox}.{queue}"), timeout=hold, blocking_timeout=wait, sleep=0.02,
                          thread_local=False, raise_on_release_error=False)

    return lock
