"""One answer for every failure a view can meet: a clear JSON status, never a traceback.

Every view (widget API, stream, instructor, room, console) maps what went
wrong through `answer_error`, so the same fault gets the same words and the
same status wherever it happens:

* a widget's `Busy` (its action lock held too long) is a 503 to retry;
* a refusal of ours (the guards' `Refused`, a body that does not fit, a
  widget's `Refused`, the site full) is a 4xx (or 503) saying what was wrong;
* a key of the wrong type (a console made `pending` a string) is a 409
  that says so and points at Reset;
* Valkey away, loading, a replica, or a cluster mid-failover is a 503 the
  page retries (`VALKEY_DOWN`);
* Valkey out of memory is a 503 too (`is_out_of_memory`): redis-py raises
  `OutOfMemoryError` for a plain command, and a script that met the limit
  arrives translated into an `EmqError` whose cause is that error;
* a client that went away mid-upload is nobody's failure: one log line;
* anything else is a bug of ours, logged with its traceback and answered 500.
"""

from __future__ import annotations

import logging
from typing import Any

from redis.exceptions import (
    BusyLoadingError,
    ClusterError,
    OutOfMemoryError,
    ReadOnlyError,
    RedisClusterException,
    ResponseError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeout
from starlette.requests import ClientDisconnect

from server.emq.errors import EmqError
from server.emq.keyspace import BadId
from server.emq.shape import FlowShapeError
from server.sandboxes.admission import AddressFull, Full
from server.sandboxes.sandbox import NoSandbox
from server.web.answer import JSONAnswer
from server.web.bodies import BadBody
from server.web.guards import Refused
from server.widgets import base as widget_base
from server.widgets.turn import Busy

log = logging.getLogger("emqlab.api")

WRONG_TYPE = ("A key of this widget holds another type than the key grammar gives it (a console line "
              "changed it), so the action cannot run on it. Press Reset: it removes the keys whatever they hold.")


# Valkey away, loading, or a replica after a failover: the widget retries.
# On a cluster: no node answers (RedisClusterException), or the command's
# retries ran out while the topology changed (ClusterError, ClusterDownError).
VALKEY_DOWN = (RedisConnectionError, RedisTimeout, BusyLoadingError, ReadOnlyError, OSError,
               RedisClusterException, ClusterError)

# What the pages and forms catch: every fault of Valkey's that a retry outlives.
VALKEY_FAULTS = (*VALKEY_DOWN, OutOfMemoryError)

UNREACHABLE = "Valkey is unreachable right now; the widget will recover when it returns."
OUT_OF_MEMORY = (
    "Valkey is out of memory right now, so nothing was written; "
    "idle sandboxes expire and the site recovers by itself: try again in a minute."
)


def problem(status: int, message: str, **extra: Any) -> JSONAnswer:
    return JSONAnswer({"error": message, **extra}, status_code=status)


def is_out_of_memory(exc: BaseException | None) -> bool:
    """True for Valkey's OOM refusal, however it travelled (plain, or out of a script)."""
    seen = 0
    while exc is not None and seen < 5:
        if isinstance(exc, OutOfMemoryError):
            return True
        text = str(exc)
        if text.startswith("OOM ") or "OOM command not allowed" in text:
            return True
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False


def is_fault(exc: BaseException) -> bool:
    """A fault of Valkey's (away or out of memory) rather than a refusal or a bug."""
    return isinstance(exc, VALKEY_DOWN) or is_out_of_memory(exc)


def fault_message(exc: BaseException) -> str:
    return OUT_OF_MEMORY if is_out_of_memory(exc) else UNREACHABLE


def answer_error(exc: Exception) -> JSONAnswer:
    """The JSON answer for `exc`, raised anywhere in a view."""
    if isinstance(exc, LookupError):
        return problem(404, str(exc).strip("'\""))
    if isinstance(exc, Refused):
        headers = {"Retry-After": "10"} if exc.status in (429, 503) else None
        return JSONAnswer({"error": str(exc)}, status_code=exc.status, headers=headers)
    if isinstance(exc, BadBody):
        return problem(exc.status, str(exc))
    if isinstance(exc, NoSandbox):
        return problem(403, str(exc))
    if isinstance(exc, (BadId, FlowShapeError)):
        return problem(400, str(exc))
    if isinstance(exc, widget_base.Refused):
        return problem(409, str(exc))
    if isinstance(exc, AddressFull):
        return JSONAnswer({"error": str(exc)}, status_code=429, headers={"Retry-After": "60"})
    if isinstance(exc, Full):
        return JSONAnswer({"error": str(exc)}, status_code=503, headers={"Retry-After": "60"})
    if isinstance(exc, ResponseError) and "WRONGTYPE" in str(exc):
        return problem(409, WRONG_TYPE)
    if isinstance(exc, Busy):
        return JSONAnswer({"error": str(exc)}, status_code=503, headers={"Retry-After": "1"})
    if is_out_of_memory(exc):
        log.warning("valkey is out of memory: answered 503")
        return JSONAnswer({"error": OUT_OF_MEMORY}, status_code=503, headers={"Retry-After": "30"})
    if isinstance(exc, EmqError):
        return problem(409, str(exc))
    if isinstance(exc, VALKEY_DOWN):
        return JSONAnswer({"error": UNREACHABLE}, status_code=503, headers={"Retry-After": "2"})
    if isinstance(exc, ClientDisconnect):
        # The visitor closed the tab mid-upload: no one is waiting for this answer.
        log.info("client went away before its request body arrived")
        return problem(400, "the request body did not arrive: the client disconnected")
    # A bug of ours: logged with its traceback on the server, never shown.
    log.exception("widget action failed", exc_info=exc)
    return problem(500, "the server failed on this action; it has been logged")


__all__ = [
    "OUT_OF_MEMORY",
    "UNREACHABLE",
    "VALKEY_DOWN",
    "VALKEY_FAULTS",
    "Refused",
    "answer_error",
    "fault_message",
    "is_fault",
    "is_out_of_memory",
    "problem",
]
